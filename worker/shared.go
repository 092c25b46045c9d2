package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// SharedDB is a database that holds both the store and the transport, so that a worker can run a
// batch — claim, load, commit, publish, acknowledge — in one transaction of it (Config.SharedTx).
// pgtx.New makes one for pgstore and pgtransport on one PostgreSQL pool.
type SharedDB interface {
	// Begin starts a transaction. The worker gives ctx a deadline, Visibility/3 away; the
	// database must end the transaction (rolling it back) when its client leaves it idle, or
	// runs one statement, for longer than the time left until that deadline, so that a worker
	// that hangs cannot hold the groups it claimed for longer than Visibility (pgtx sets the
	// server's idle_in_transaction_session_timeout and statement_timeout to it).
	Begin(ctx context.Context) (Tx, error)
}

// Tx is one transaction of a SharedDB. Every method runs inside it, and nothing is visible to
// others before Commit; a Rollback (or a COMMIT that fails) undoes all of it, and the messages
// claimed in it are claimable again at once. After a method fails the transaction is aborted:
// only Rollback remains. Arguments are checked as the Store and the Transport check them.
type Tx interface {
	// Claim is transport.Transport.ClaimBatch in the transaction: the groups stay held by it
	// until it ends, whatever the lease says. It returns at most max messages, and up to depth
	// consecutive messages of each group it takes (from its head, in order, adjacent in the
	// result) where ClaimBatch returns one. The worker acknowledges a prefix of a group's leases
	// and nacks at most the one after it; the leases behind are neither, and the group must be
	// free for them once the transaction ends, in order.
	Claim(ctx context.Context, worker string, visibility time.Duration, minPriority, max, depth int) ([]transport.Lease, error)
	// Load is stead.Store.LoadForEvents in the transaction.
	Load(ctx context.Context, refs []stead.EventRef) ([]stead.Loaded, error)
	// CommitBatch is stead.Store.CommitBatch in the transaction. The emits of the items must be
	// empty: in a shared transaction the transport's queue is the outbox, so the caller
	// publishes them with Publish.
	CommitBatch(ctx context.Context, items []stead.CommitItem) ([]stead.CommitResult, error)
	// Publish is transport.Transport.PublishBatch in the transaction.
	Publish(ctx context.Context, msgs []transport.Outgoing) error
	// Ack is transport.Transport.AckBatch in the transaction. It may only check the leases and
	// queue the ack for Commit (pgtx does, to send it with the COMMIT): an ack that fails there
	// fails the Commit, and nothing of the transaction commits.
	Ack(ctx context.Context, ls []transport.Lease) error
	// Nack is transport.Transport.Nack in the transaction, queued for Commit like Ack may be.
	Nack(ctx context.Context, l *transport.Lease, delay time.Duration) error
	// Step commits one step (its bundle without emits), publishes what it emitted and acks its
	// message, in one round trip where the database allows it, and may commit the transaction in
	// that same round trip when the step wins (pgtx does; Commit then does nothing). A step that
	// loses its compare-and-swap comes back as the result's Err, with nothing of the transaction
	// committed and the transaction usable only for Rollback; an invalid step is an error
	// wrapping stead.ErrInvalid before anything is sent.
	Step(ctx context.Context, item stead.CommitItem, emitted []transport.Outgoing, l *transport.Lease) (stead.CommitResult, error)
	// Commit commits the transaction.
	Commit(ctx context.Context) error
	// Rollback ends the transaction without committing it; after Commit it does nothing.
	Rollback(ctx context.Context) error
}

// sharedBatch handles a batch in ONE transaction: claim, load, commit, publish of the emitted
// events and acknowledgement of the messages all commit together, or none of it does (a rollback
// also returns the claimed messages to the queue at once). Emitted events are published inside the
// transaction instead of passing through the store's outbox: the transport's queue is the outbox.
// Spawned children are created after the commit, from the spawn intents that committed with their
// parent. BatchWait does not apply: a transaction is never held open waiting for traffic.
//
// The transaction, and so the hold on the groups it claims, is bounded by Visibility whether or
// not this worker keeps running: it gets a third of Visibility (the context's deadline, which
// cancels a worker that is merely slow), and the database ends it once it has been idle, or one
// of its statements has run, for longer than that third (SharedDB.Begin), which is what stops a
// worker that hangs (a stopped process, whose deadline never fires). A hang after at most a third,
// in a statement of at most a third, then idle for a third: the groups are free within Visibility
// of the claim. The steps of a shared batch must therefore finish well within Visibility/3.
func (w *Worker) sharedBatch(ctx, outer context.Context) (int, error) {
	places := w.slots.take(ctx, w.cfg.BatchSize) // before BEGIN: no transaction waits for places
	if places == 0 {
		return 0, nil // stopping
	}
	claimed := 0
	defer func() { w.slots.give(places - claimed) }()
	work, cancel := context.WithTimeout(outer, w.cfg.Visibility/3)
	defer cancel()
	tx, err := w.cfg.SharedTx.Begin(work)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(outer)) }()
	start := w.tel.now()
	leases, err := w.prioritised(func(minPriority int) ([]transport.Lease, error) {
		return tx.Claim(work, w.cfg.Name, w.cfg.Visibility, minPriority, places, w.cfg.GroupDepth)
	})
	if err != nil || len(leases) == 0 {
		return 0, err
	}
	claimed = len(leases) // their places are freed as their chains' steps end
	// Every outcome is provisional until the transaction commits: a failure below rolls back,
	// which hands every message back, and records them all as retries.
	work, obs, span := w.tel.beginBatch(work, leases, start)
	committed := false
	defer func() {
		if !committed {
			obs.setAll(outcomeRetry)
		}
		obs.end(span)
	}()
	refs := make([]stead.EventRef, len(leases))
	for i, l := range leases {
		refs[i] = stead.EventRef{ExecutionID: l.Group, EventID: l.Event.ID}
	}
	lctx, lspan := w.tel.store(work, "LoadForEvents", "stead_executions", len(refs))
	loaded, err := tx.Load(lctx, refs)
	endSpan(lspan, err)
	if err != nil {
		// Rolling back releases the claims: the messages are claimable again at once.
		claimed = 0 // nothing was stepped: every place is freed
		w.log.Warn("batch load failed", slog.Any("err", err))
		sleep(ctx, w.cfg.RetryDelay)
		return len(leases), nil
	}
	// A transaction cannot commit part of a batch and keep holding the rest (the groups it
	// claimed are free for others once it ends), so it waits for every step: the slowest
	// bounds the batch, within the transaction's deadline.
	p := w.startChains(ctx, work, leases, loaded, obs).round(true)
	if len(leases) == 1 {
		committed = w.sharedOne(ctx, outer, work, tx, leases[0], &p)
		return 1, nil
	}
	emits := make([][]stead.Emit, len(p.items))
	for k := range p.items {
		emits[k] = p.items[k].Bundle.Emits
		p.items[k].Bundle.Emits = nil
	}
	var ds []delivery
	var out []transport.Outgoing
	if len(p.items) > 0 {
		cctx, cspan := w.tel.store(work, "CommitBatch", "stead_executions", len(p.items))
		results, err := tx.CommitBatch(cctx, p.items)
		endSpan(cspan, err)
		if err != nil {
			w.log.Warn("batch commit failed", slog.Any("err", err))
			sleep(ctx, w.cfg.RetryDelay)
			return len(leases), nil
		}
		for k, r := range results {
			if r.Err == nil && k < len(p.items) {
				out = addressed(out, emits[k], p.items[k].Execution.Priority)
			}
		}
		ds = w.sortResults(leases, &p, results)
	}
	if len(out) > 0 {
		if err := tx.Publish(work, out); err != nil {
			w.log.Warn("publish in transaction failed", slog.Any("err", err))
			sleep(ctx, w.cfg.RetryDelay)
			return len(leases), nil
		}
	}
	if len(p.acks) > 0 {
		if err := tx.Ack(work, p.acks); err != nil {
			w.log.Warn("ack in transaction failed", slog.Any("err", err))
			sleep(ctx, w.cfg.RetryDelay)
			return len(leases), nil
		}
	}
	for _, q := range p.later {
		if err := tx.Nack(work, &q.lease, w.delay(q.v)); err != nil {
			w.log.Warn("nack in transaction failed", slog.Any("err", err))
			sleep(ctx, w.cfg.RetryDelay)
			return len(leases), nil
		}
	}
	if err := w.commitTx(work, tx); err != nil {
		// With a lost connection the outcome is unknown; either way redelivery is safe (dedupe).
		w.log.Warn("commit failed", slog.Any("err", err))
		return len(leases), nil
	}
	committed = true
	w.spawnCommitted(w.tel.carry(outer, work), ds)
	return len(leases), nil
}

// commitTx commits the shared transaction, in a span of its own.
func (w *Worker) commitTx(ctx context.Context, tx Tx) error {
	cctx, span := w.tel.store(ctx, "COMMIT", "stead_executions", 0)
	err := tx.Commit(cctx)
	endSpan(span, err)
	return err
}

// spawnCommitted reports the steps a shared transaction committed and creates the children they
// spawned (their emits were published in the transaction already).
func (w *Worker) spawnCommitted(work context.Context, ds []delivery) {
	var spawning []delivery
	for _, d := range ds {
		w.committedAll(d)
		if len(d.b.Spawns) > 0 {
			spawning = append(spawning, d)
		}
	}
	if len(spawning) > 0 {
		if err := w.deliver(work, spawning); err != nil {
			w.log.Warn("child creation deferred to the relay", slog.Any("err", err))
		}
	}
}

// sharedOne ends the transaction of a single message in one round trip instead of four: the
// commit of its step, the publish of what the step emitted, the message's ack and (with pgtx)
// COMMIT go to the server together (Tx.Step). A lost CAS rolls the whole transaction back, which
// hands the message back at once: the redelivery a lost CAS asks for, and the other statements
// are undone with it.
//
// It reports whether the transaction committed.
func (w *Worker) sharedOne(ctx, outer, work context.Context, tx Tx, lease transport.Lease, p *batchPlan) bool {
	var ds []delivery
	var err error
	switch {
	case len(p.items) == 1:
		it := &p.items[0]
		// The transport's queue is the outbox: the emits are published in the transaction.
		out := addressed(nil, it.Bundle.Emits, it.Execution.Priority)
		it.Bundle.Emits = nil
		var res stead.CommitResult
		sctx, span := w.tel.store(work, "Step", "stead_executions", 1)
		res, err = tx.Step(sctx, *it, out, &lease)
		endSpan(span, err)
		switch {
		case errors.Is(err, stead.ErrInvalid):
			// An invalid step (the store refused it, or its emits do not encode): nothing was
			// sent; hand the message back for a retry.
			w.log.Warn("commit failed", slog.String("execution", lease.Group), slog.Any("err", err))
			p.obs.at(0).set(outcomeRetry)
			err = tx.Nack(work, &lease, w.cfg.RetryDelay)
		case err == nil && errors.Is(res.Err, stead.ErrConflict):
			w.log.Debug("lost the version race; redelivering", slog.Any("err", res.Err))
			p.obs.at(0).set(outcomeConflict)
			return true // the rollback hands the message back: that is the outcome
		case err == nil && res.Err != nil:
			err = res.Err
		case err == nil:
			it.Execution.Version = res.Version
			p.obs.at(0).committed(it.Execution)
			ds = append(ds, delivery{exe: it.Execution, b: &it.Bundle, ev: p.events[0], trace: p.obs.at(0).traceOf()})
		}
	case len(p.acks) == 1:
		err = tx.Ack(work, p.acks)
	case len(p.later) == 1:
		err = tx.Nack(work, &p.later[0].lease, w.delay(p.later[0].v))
	}
	if err != nil {
		w.log.Warn("step in transaction failed", slog.Any("err", err))
		sleep(ctx, w.cfg.RetryDelay)
		return false
	}
	if err := w.commitTx(work, tx); err != nil {
		// With a lost connection the outcome is unknown; either way redelivery is safe (dedupe).
		w.log.Warn("commit failed", slog.Any("err", err))
		return false
	}
	w.spawnCommitted(w.tel.carry(outer, work), ds)
	return true
}
