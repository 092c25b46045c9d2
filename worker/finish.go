package worker

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/transport"
)

// Finisher is a database that holds both the store and the transport and ends a round of a
// batch — the commit of the steps that ended, the publish of what they emitted, the
// acknowledgement and the nacks of their messages — in one short transaction
// (Config.Finisher). sqlitetx.New makes one for sqlitestore and sqlitetransport on one
// sqlitedb.DB.
//
// It is not a SharedDB: the claim and the load stay transactions of their own, so the
// transaction spans the round's writes only and never the steps' actions, which may take seconds
// and run side by side. On a database with one writer at a time (SQLite) a transaction from the
// claim to the commit would hold every other writer of the file for as long as the slowest
// action; this one holds it for the statements alone.
type Finisher interface {
	// BeginFinish begins a write transaction. It may wait for the database's write lock, which
	// is held only by transactions as short as this one.
	BeginFinish(ctx context.Context) (FinishTx, error)
}

// FinishTx is one transaction of a Finisher. Every method runs inside it, nothing is visible to
// others before Commit, and after a method fails only Rollback remains; Rollback (or a Commit
// that fails) undoes all of it. Arguments are checked as the Store and the Transport check them.
type FinishTx interface {
	// CommitBatch is stead.Store.CommitBatch in the transaction: a lost compare-and-swap is its
	// item's result (stead.ErrConflict), known before the transaction goes on. What the items
	// still emit is written to the store's outbox with them, for the relay: the caller publishes
	// the rest with Publish instead (route).
	CommitBatch(ctx context.Context, items []stead.CommitItem) ([]stead.CommitResult, error)
	// Publish is transport.Transport.PublishBatch in the transaction.
	Publish(ctx context.Context, msgs []transport.Outgoing) error
	// Ack is transport.Transport.AckBatch in the transaction.
	Ack(ctx context.Context, ls []transport.Lease) error
	// Nack is transport.Transport.Nack in the transaction.
	Nack(ctx context.Context, l *transport.Lease, delay time.Duration) error
	// Commit commits the transaction.
	Commit(ctx context.Context) error
	// Rollback ends the transaction without committing it; after Commit it does nothing.
	Rollback(ctx context.Context) error
}

// emitRoute is where an event that a committed step emitted goes.
type emitRoute int

const (
	// routeNowhere: the emit addresses no execution; nothing delivers it.
	routeNowhere emitRoute = iota
	// routePublish: to its target's queue. Ends with a transaction that commits the step and
	// publishes (together, apart with a Finisher) publish it in that transaction, with no outbox
	// row and no relay hop; others leave it in the outbox, and relay.deliver publishes it.
	routePublish
	// routeRelay: a command cascading to a child, which relay.deliver applies to the child at
	// once instead of queueing it behind the child's backlog. It always passes through the
	// outbox, whose row the relay acknowledges once applied.
	routeRelay
)

// route is the one place that decides where an emitted event goes, for every end of the path:
// e, emitted by a committed step (or command) of exe, and for routePublish the message to
// publish: at the emitter's priority (children inherit their parent's, so the emitter's is the
// target's in every tree the engine builds; the relay looks the target's up for leftovers), and
// with exe's flow when it is exe's own start, one that its creator left in the outbox.
func route(m Machines, exe *stead.Execution, e stead.Emit) (transport.Outgoing, emitRoute) {
	if r := routeOf(e); r != routePublish {
		return transport.Outgoing{}, r
	}
	o := transport.Outgoing{Group: e.Target, Event: e.Event, Priority: exe.Priority}
	if e.Target == exe.ID && e.Event.Kind == chart.KindStart {
		o.Flow = flowOf(m, exe)
	}
	return o, routePublish
}

// routeOf is where e goes whoever emitted it: route's decision, which the relay of outbox
// leftovers (relayEntries), knowing no emitter, takes alone.
func routeOf(e stead.Emit) emitRoute {
	switch {
	case e.Target == "":
		return routeNowhere
	case chart.IsControl(e.Event.Kind):
		return routeRelay
	}
	return routePublish
}

// inCommit splits what a step of exe emitted for ends whose commit's transaction publishes:
// the messages to publish in it if the step commits (appended to out), and the emits to leave in
// the step's bundle, for the store's outbox and the relay (route). A worker's step never emits a
// command (only commands do, and they commit through the store's outbox), so for a step the
// rest is empty; it is kept rather than dropped so that no end can lose one.
func inCommit(m Machines, out []transport.Outgoing, exe *stead.Execution, emits []stead.Emit) ([]transport.Outgoing, []stead.Emit) {
	var keep []stead.Emit
	for _, e := range emits {
		switch o, r := route(m, exe, e); r {
		case routePublish:
			out = append(out, o)
		case routeRelay:
			keep = append(keep, e)
		}
	}
	return out, keep
}

// commitRouted commits p's items with commit, a CommitBatch inside a transaction that also
// publishes (Tx, FinishTx), having first taken out of their bundles what route publishes in that
// transaction. It returns the committed steps and what their steps emitted to publish, for the
// caller to publish before the transaction commits; a lost compare-and-swap joins p.later
// (sortResults), and its emits are dropped with it.
func (w *Worker) commitRouted(ctx context.Context, commit func(context.Context, []stead.CommitItem) ([]stead.CommitResult, error),
	leases []transport.Lease, p *batchPlan) ([]delivery, []transport.Outgoing, error) {
	if len(p.items) == 0 {
		return nil, nil, nil
	}
	pubs := make([][]transport.Outgoing, len(p.items))
	for k := range p.items {
		it := &p.items[k]
		pubs[k], it.Bundle.Emits = inCommit(w.cfg.Machines, nil, it.Execution, it.Bundle.Emits)
	}
	cctx, end := w.obs.store(ctx, "CommitBatch", "stead_executions", len(p.items))
	results, err := commit(cctx, p.items)
	done(end, err)
	if err != nil {
		return nil, nil, fmt.Errorf("commit: %w", err)
	}
	var out []transport.Outgoing
	for k, r := range results {
		if r.Err == nil && k < len(pubs) {
			out = append(out, pubs[k]...)
		}
	}
	return w.sortResults(leases, p, results), out, nil
}

// finishInTx ends a round of an apart batch in one transaction of the Finisher: the commit of
// its steps, the publish of what they emitted (route: no outbox row, no relay hop), the acks of
// the messages whose steps committed or that needed none, and the nacks of the rest, among them
// those whose steps lost their compare-and-swap, which the commit's results say before any ack.
// A crash before COMMIT leaves nothing of it, and the messages are claimed again once their
// leases end; after COMMIT nothing is done again. Only the children the steps spawned, and what
// the relay applies, are delivered after it (relay.deliver).
//
// A transaction that fails writes nothing: the round is then settled as apart without a
// Finisher settles a failed commit, call by call, the steps retried after RetryDelay.
func (a *apart) finishInTx(ctx context.Context, leases []transport.Lease, p *batchPlan) {
	w := a.w
	acks, later := slices.Clone(p.acks), slices.Clone(p.later) // as planned, for a failure
	// Out of the heartbeat before the transaction: an extension waits for the write lock the
	// transaction holds, and drop waits for an extension in flight.
	w.beats.drop(p.acks...)
	for _, i := range p.stepped {
		w.beats.drop(leases[i])
	}
	for _, q := range p.later {
		w.beats.drop(q.lease)
	}
	ds, err := a.inTx(ctx, leases, p)
	if err != nil {
		w.log.Warn("finish transaction failed", slog.Int("size", len(p.items)), slog.Any("err", err))
		for _, i := range p.stepped {
			p.obs.outcome(i, StepRetry, err)
			w.nack(ctx, &leases[i], w.cfg.RetryDelay)
		}
		w.ack(ctx, acks)
		for _, q := range later {
			w.settle(ctx, &q.lease, q.v)
		}
		return
	}
	var relay []delivery
	for _, d := range ds {
		w.committedAll(d)
		if len(d.b.Spawns) > 0 || len(d.b.Emits) > 0 {
			relay = append(relay, d)
		}
	}
	if w.limits {
		w.finished(ds)
	}
	if len(relay) > 0 {
		if err := w.deliver(ctx, relay); err != nil {
			w.log.Warn("delivery deferred to the relay", slog.Any("err", err))
		}
	}
}

// inTx runs the transaction of finishInTx and returns the steps it committed.
func (a *apart) inTx(ctx context.Context, leases []transport.Lease, p *batchPlan) ([]delivery, error) {
	w := a.w
	tx, err := w.cfg.Finisher.BeginFinish(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // after Commit it does nothing
	ds, out, err := w.commitRouted(ctx, tx.CommitBatch, leases, p)
	if err != nil {
		return nil, err
	}
	for len(out) > 0 {
		n := min(len(out), transport.MaxBatch)
		pctx, end := w.obs.transport(ctx, "PublishBatch", n)
		err := tx.Publish(pctx, out[:n])
		done(end, err)
		if err != nil {
			return nil, fmt.Errorf("publish: %w", err)
		}
		out = out[n:]
	}
	acks := p.acks
	for _, q := range p.later {
		if q.v == doAck {
			acks = append(acks, q.lease)
		}
	}
	for len(acks) > 0 {
		n := min(len(acks), transport.MaxBatch)
		actx, end := w.obs.transport(ctx, "AckBatch", n)
		err := tx.Ack(actx, acks[:n])
		done(end, err)
		if err != nil {
			return nil, fmt.Errorf("ack: %w", err)
		}
		acks = acks[n:]
	}
	for _, q := range p.later {
		if q.v == doAck {
			continue
		}
		nctx, end := w.obs.transport(ctx, "Nack", 1)
		err := tx.Nack(nctx, &q.lease, w.delay(q.v))
		done(end, err)
		if err != nil {
			return nil, fmt.Errorf("nack: %w", err)
		}
	}
	cctx, end := w.obs.store(ctx, "COMMIT", "stead_executions", 0)
	err = tx.Commit(cctx)
	done(end, err)
	if err != nil {
		return nil, fmt.Errorf("commit the transaction: %w", err)
	}
	return ds, nil
}
