package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// The worker has one path for every claimed message, whatever the backend and the batch size:
//
//	take places (slots.go) → claim with load (ends.claim) → step, each execution's chain on its
//	own goroutine (batch.go) → commit and settle (ends.finish) → report (committed) and relay
//	what the steps spawned and, through the outbox, emitted (relay.go)
//
// What differs between backends is only how a batch reaches its databases, its ends: apart,
// each call a transaction of the store or of the transport (every backend), or together, the
// whole batch one transaction of the database that holds both (Config.SharedTx, which pgtx
// offers for pgstore and pgtransport on one pool). Apart with a Finisher (Config.Finisher,
// which sqlitetx offers for sqlitestore and sqlitetransport on one file) claims and loads a
// call each and ends each round in one transaction. Where the commit's transaction can publish
// (together, the Finisher's), what the steps emit is published in it instead of passing through
// the outbox; route decides that for every emit, at every end.

// ends is how one batch reaches the store and the transport.
type ends interface {
	// claim claims up to max messages.
	claim(stop context.Context, max int) ([]transport.Lease, error)
	// load loads the executions of the leases with "already processed?". When it fails the batch
	// hands the leases back (abandon).
	load(ctx context.Context, leases []transport.Lease) ([]stead.Loaded, error)
	// whole reports whether the batch must end at once, after its slowest step: a transaction
	// cannot commit part of a batch and go on holding the rest.
	whole() bool
	// finish commits the steps of p, publishes what they emitted, acknowledges p.acks, settles
	// p.later, and reports and relays what committed. It runs once per round (whole: once).
	finish(ctx context.Context, leases []transport.Lease, p *batchPlan)
	// abandon hands back every message of a batch whose load failed.
	abandon(ctx context.Context, leases []transport.Lease)
	// close ends the batch's transaction, if finish did not; apart, it does nothing.
	close()
}

// batch runs one batch through the path: it takes places for at most BatchSize steps, claims and
// loads no more messages than that, steps them, each execution's messages in order on a
// goroutine of its own, and commits and settles them.
//
// Apart, a slow step does not hold the others of its batch: the batch commits what has ended
// roundWait after its first step ended (chainRun.round), and the steps still running commit in
// later rounds as they end, on a goroutine of their own, so that the loop claims again at once.
// A shared transaction ends once, after every step.
func (w *Worker) batch(ctx, work context.Context) (int, error) {
	places := w.slots.take(ctx, w.cfg.BatchSize) // before a transaction begins: none waits for places
	if places == 0 {
		return 0, nil // stopping
	}
	start := w.obs.now()
	e, work, cancel := w.open(ctx, work)
	leases, err := e.claim(ctx, places)
	w.slots.give(places - len(leases))
	if err != nil || len(leases) == 0 {
		e.close()
		cancel()
		return 0, err
	}
	work, obs := w.obs.batch(work, leases, start, w.cfg.BatchSize == 1 && w.cfg.SharedTx == nil)
	loaded, err := e.load(work, leases)
	if err != nil {
		w.slots.give(len(leases))
		w.log.Warn("batch load failed", slog.Int("size", len(leases)), slog.Any("err", err))
		obs.setAll(StepRetry, err)
		e.abandon(work, leases)
		e.close()
		obs.end()
		cancel()
		return len(leases), nil
	}
	run := w.startChains(ctx, work, leases, loaded, obs)
	p := run.round(e.whole()) // whole: every chain, so nothing is left for later rounds
	e.finish(work, leases, &p)
	if run.left == 0 {
		e.close()
		obs.end()
		cancel()
		return len(leases), nil
	}
	w.tails.Go(func() {
		defer cancel()
		for run.left > 0 {
			p := run.round(false)
			e.finish(work, leases, &p)
		}
		obs.end()
	})
	return len(leases), nil
}

// open returns the ends of the next batch and the context its calls and actions run under: the
// worker's work context, apart; for a shared transaction, one with the transaction's deadline,
// Visibility/3 away (see SharedDB.Begin). cancel releases that context.
func (w *Worker) open(stop, work context.Context) (ends, context.Context, context.CancelFunc) {
	if w.cfg.SharedTx == nil {
		return &apart{w: w, work: work}, work, func() {}
	}
	tctx, cancel := context.WithTimeout(work, w.cfg.Visibility/3)
	return &together{w: w, stop: stop, outer: work, work: tctx}, tctx, cancel
}

// apart reaches the store and the transport with a call each: claim, load, commit (what the
// steps emit goes to the outbox with it), publish, acknowledge. Every call is its own
// transaction; the leases and the outbox make the sequence safe (a crash between the commit and
// the ack redelivers a message whose event the store knows it applied). With a Finisher
// (Config.Finisher) the claim and the load are calls of their own and each round ends in one
// transaction: commit, publish, acknowledge (finishInTx).
type apart struct {
	w    *Worker
	work context.Context
}

func (a *apart) whole() bool { return false }
func (a *apart) close()      {}

func (a *apart) claim(stop context.Context, max int) ([]transport.Lease, error) {
	leases, err := a.w.claimBatch(stop, a.work, max)
	a.w.beats.add(leases)
	return leases, err
}

func (a *apart) load(ctx context.Context, leases []transport.Lease) ([]stead.Loaded, error) {
	w := a.w
	if w.cfg.BatchSize == 1 {
		l := &leases[0]
		lctx, end := w.obs.store(ctx, "LoadForEvent", "stead_executions", 1)
		exe, processed, err := w.store.LoadForEvent(lctx, l.Group, l.Event.ID)
		if errors.Is(err, stead.ErrNotFound) {
			exe, err = nil, nil
		}
		done(end, err)
		return []stead.Loaded{{Execution: exe, Processed: processed}}, err
	}
	refs := refsOf(leases)
	lctx, end := w.obs.store(ctx, "LoadForEvents", "stead_executions", len(refs))
	loaded, err := w.store.LoadForEvents(lctx, refs)
	done(end, err)
	return loaded, err
}

func (a *apart) abandon(ctx context.Context, leases []transport.Lease) {
	for i := range leases {
		a.w.nack(ctx, &leases[i], a.w.cfg.RetryDelay)
	}
}

// finish commits the steps of p, reports them, relays what they produced, acknowledges what p
// acks and settles the rest: with a Finisher in one transaction (finishInTx), else a call each.
func (a *apart) finish(work context.Context, leases []transport.Lease, p *batchPlan) {
	w := a.w
	if w.cfg.Finisher != nil {
		a.finishInTx(work, leases, p)
		return
	}
	var ds []delivery
	if len(p.items) > 0 {
		results, err := a.commit(work, p.items)
		if err != nil {
			w.log.Warn("commit failed", slog.Int("size", len(p.items)), slog.Any("err", err))
			for _, i := range p.stepped {
				p.obs.outcome(i, StepRetry, err)
				p.later = append(p.later, pending{leases[i], doRetry})
			}
		} else {
			ds = w.sortResults(leases, p, results)
		}
	}
	for _, d := range ds {
		w.committedAll(d)
	}
	if len(ds) > 0 {
		// The steps are durable: from here on a failure only delays delivery (the relay
		// retries), so their messages are acknowledged whatever happens.
		if err := w.deliver(work, ds); err != nil {
			w.log.Warn("delivery deferred to the relay", slog.Any("err", err))
		}
	}
	w.ack(work, p.acks)
	for _, q := range p.later {
		w.settle(work, &q.lease, q.v)
	}
	if w.limits {
		w.finished(ds)
	}
}

// commit commits the items; an unbatched worker's one item with the store's single commit (a
// lost compare-and-swap comes back as its result's Err, as CommitBatch returns it).
func (a *apart) commit(ctx context.Context, items []stead.CommitItem) ([]stead.CommitResult, error) {
	w := a.w
	if w.cfg.BatchSize == 1 {
		it := &items[0]
		cctx, end := w.obs.store(ctx, "Commit", "stead_executions", 1)
		res, err := w.store.Commit(cctx, it.Execution, it.Bundle)
		done(end, err)
		if errors.Is(err, stead.ErrConflict) {
			return []stead.CommitResult{{Err: err}}, nil
		}
		return []stead.CommitResult{{Committed: res}}, err
	}
	cctx, end := w.obs.store(ctx, "CommitBatch", "stead_executions", len(items))
	results, err := w.store.CommitBatch(cctx, items)
	done(end, err)
	return results, err
}

// together runs a batch in ONE transaction of a SharedDB: claim, load, commit, publish of the
// emitted events and acknowledgement of the messages all commit together, or none of it does (a
// rollback also returns the claimed messages to the queue at once). Emitted events are
// published inside the transaction instead of passing through the store's outbox: the
// transport's queue is the outbox. Spawned children are created after the commit, from the
// spawn intents that committed with their parent. BatchWait does not apply: a transaction is
// never held open waiting for traffic.
//
// The transaction, and so the hold on the groups it claims, is bounded by Visibility whether or
// not this worker keeps running: it gets a third of Visibility (its context's deadline, which
// cancels a worker that is merely slow), and the database ends it once it has been idle, or one
// of its statements has run, for longer than that third (SharedDB.Begin), which is what stops a
// worker that hangs (a stopped process, whose deadline never fires). A hang after at most a
// third, in a statement of at most a third, then idle for a third: the groups are free within
// Visibility of the claim. The steps of a shared batch must therefore finish well within
// Visibility/3.
type together struct {
	w     *Worker
	stop  context.Context // the worker's run context: failures pause the loop until it is done
	outer context.Context // the worker's work context, which outlives the transaction's
	work  context.Context // the transaction's, with its deadline
	tx    Tx
	// What the claim loaded with its leases (Tx.Claim), or why that load failed.
	loaded  []stead.Loaded
	loadErr error
}

func (t *together) whole() bool { return true }

func (t *together) close() {
	if t.tx != nil {
		_ = t.tx.Rollback(context.WithoutCancel(t.outer)) // after Commit it does nothing
	}
}

// claim claims and loads in one call of the transaction (Tx.Claim), so that load has nothing
// left to send.
func (t *together) claim(_ context.Context, max int) ([]transport.Lease, error) {
	w := t.w
	tx, err := w.cfg.SharedTx.Begin(t.work)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	t.tx = tx
	return w.prioritised(func(minPriority int) ([]transport.Lease, error) {
		ls, loaded, err := tx.Claim(t.work, w.cfg.Name, w.cfg.Visibility, minPriority, max, w.cfg.GroupDepth)
		if err != nil && len(ls) > 0 {
			// Claimed, not loaded: the batch fails as a failed load does (load, abandon).
			t.loaded, t.loadErr = nil, err
			return ls, nil
		}
		t.loaded, t.loadErr = loaded, nil
		return ls, err
	})
}

// load returns what the claim loaded.
func (t *together) load(_ context.Context, leases []transport.Lease) ([]stead.Loaded, error) {
	if t.loadErr != nil {
		return nil, fmt.Errorf("load: %w", t.loadErr)
	}
	if len(t.loaded) != len(leases) {
		return nil, fmt.Errorf("load: %d executions for %d leases", len(t.loaded), len(leases))
	}
	return t.loaded, nil
}

// abandon rolls back: the claims end with the transaction, and the messages are claimable again
// at once.
func (t *together) abandon(context.Context, []transport.Lease) {
	t.close()
	sleep(t.stop, t.w.cfg.RetryDelay)
}

// finish commits the batch's transaction. Every outcome is provisional until then: a failure
// rolls back, which hands every message back, and records them all as retries.
func (t *together) finish(ctx context.Context, leases []transport.Lease, p *batchPlan) {
	w := t.w
	t.work = ctx // the transaction's deadline, with what the observer hangs the batch's calls from
	var ds []delivery
	var err error
	if len(leases) == 1 {
		ds, err = t.one(leases[0], p)
	} else {
		ds, err = t.many(leases, p)
	}
	if err == nil {
		cctx, end := w.obs.store(t.work, "COMMIT", "stead_executions", 0)
		err = t.tx.Commit(cctx)
		done(end, err)
		if err != nil {
			// With a lost connection the outcome is unknown; either way redelivery is safe (dedupe).
			w.log.Warn("commit failed", slog.Any("err", err))
			p.obs.setAll(StepRetry, err)
			return
		}
	} else if !errors.Is(err, errRolledBack) {
		w.log.Warn("batch transaction failed", slog.Any("err", err))
		p.obs.setAll(StepRetry, err)
		sleep(t.stop, w.cfg.RetryDelay)
		return
	}
	// The committed steps' emits were published in the transaction: what is left to relay is
	// the children they spawned.
	if w.limits {
		w.finished(ds)
	}
	var spawning []delivery
	for _, d := range ds {
		w.committedAll(d)
		if len(d.b.Spawns) > 0 {
			spawning = append(spawning, d)
		}
	}
	if len(spawning) > 0 {
		if err := w.deliver(w.obs.carry(t.outer, t.work), spawning); err != nil {
			w.log.Warn("child creation deferred to the relay", slog.Any("err", err))
		}
	}
}

// errRolledBack is the outcome of a transaction whose single step lost its compare-and-swap: the
// rollback hands the message back, which is what a lost compare-and-swap asks for.
var errRolledBack = errors.New("worker: rolled back")

// many commits the items of a batch, publishes their emits and queues the acks and nacks.
func (t *together) many(leases []transport.Lease, p *batchPlan) ([]delivery, error) {
	w, tx := t.w, t.tx
	ds, out, err := w.commitRouted(t.work, tx.CommitBatch, leases, p)
	if err != nil {
		return nil, err
	}
	if len(out) > 0 {
		if err := tx.Publish(t.work, out); err != nil {
			return nil, fmt.Errorf("publish: %w", err)
		}
	}
	if len(p.acks) > 0 {
		if err := tx.Ack(t.work, p.acks); err != nil {
			return nil, fmt.Errorf("ack: %w", err)
		}
	}
	for _, q := range p.later {
		if err := tx.Nack(t.work, &q.lease, w.delay(q.v)); err != nil {
			return nil, fmt.Errorf("nack: %w", err)
		}
	}
	return ds, nil
}

// one ends the transaction of a single message in one round trip instead of four: the commit of
// its step, the publish of what the step emitted, the message's ack and (with pgtx) COMMIT go to
// the server together (Tx.Step). A lost compare-and-swap rolls the whole transaction back
// (errRolledBack), which hands the message back at once.
func (t *together) one(lease transport.Lease, p *batchPlan) ([]delivery, error) {
	w, tx := t.w, t.tx
	switch {
	case len(p.items) == 1:
		it := &p.items[0]
		var out []transport.Outgoing
		out, it.Bundle.Emits = inCommit(w.cfg.Machines, nil, it.Execution, it.Bundle.Emits)
		sctx, end := w.obs.store(t.work, "Step", "stead_executions", 1)
		res, err := tx.Step(sctx, *it, out, &lease)
		done(end, err)
		switch {
		case errors.Is(err, stead.ErrInvalid):
			// An invalid step (the store refused it, or its emits do not encode): nothing was
			// sent; hand the message back for a retry.
			w.log.Warn("commit failed", slog.String("execution", lease.Group), slog.Any("err", err))
			p.obs.outcome(0, StepRetry, nil)
			return nil, tx.Nack(t.work, &lease, w.cfg.RetryDelay)
		case err != nil:
			return nil, err
		case errors.Is(res.Err, stead.ErrConflict):
			w.log.Debug("lost the version race; redelivering", slog.Any("err", res.Err))
			p.obs.outcome(0, StepConflict, nil)
			return nil, errRolledBack
		case res.Err != nil:
			return nil, res.Err
		}
		it.Execution.Version = res.Version
		p.obs.committed(0, it.Execution)
		return []delivery{{exe: it.Execution, b: &it.Bundle, ev: p.events[0], trace: p.obs.traceOf(0)}}, nil
	case len(p.acks) == 1:
		return nil, tx.Ack(t.work, p.acks)
	case len(p.later) == 1:
		return nil, tx.Nack(t.work, &p.later[0].lease, w.delay(p.later[0].v))
	}
	return nil, nil
}

// refsOf is what a batch loads for its leases: each message's execution and event.
func refsOf(leases []transport.Lease) []stead.EventRef {
	refs := make([]stead.EventRef, len(leases))
	for i, l := range leases {
		refs[i] = stead.EventRef{ExecutionID: l.Group, EventID: l.Event.ID}
	}
	return refs
}
