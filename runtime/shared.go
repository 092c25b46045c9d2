package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// TxStore is a store backend that can enlist in a caller's PostgreSQL transaction
// (pgstore.Backend, reached through stead.Store.Backend).
type TxStore interface {
	Pool() *pgxpool.Pool
	LoadForEventsTx(ctx context.Context, tx pgx.Tx, refs []stead.EventRef) ([]stead.Loaded, error)
	CommitBatchTx(ctx context.Context, tx pgx.Tx, items []stead.CommitItem) ([]stead.CommitResult, error)
	QueueCommit(b *pgx.Batch, exe *stead.Execution, bundle stead.Bundle, res *stead.CommitResult) error
}

// TxTransport is a transport backend that can enlist in a caller's PostgreSQL transaction
// (pgtransport.Backend), reached through transport.Transport.Backend.
type TxTransport interface {
	ClaimBatchTx(ctx context.Context, tx pgx.Tx, worker string, visibility time.Duration, minPriority, max int) ([]transport.Lease, error)
	AckBatchTx(ctx context.Context, tx pgx.Tx, leases []transport.Lease) error
	PublishBatchTx(ctx context.Context, tx pgx.Tx, msgs []transport.Outgoing) error
	NackTx(ctx context.Context, tx pgx.Tx, l *transport.Lease, delay time.Duration) error
	QueuePublish(b *pgx.Batch, msgs []transport.Outgoing) error
	QueueAck(b *pgx.Batch, ls []transport.Lease) error
	QueueNack(b *pgx.Batch, l *transport.Lease, delay time.Duration) error
}

type sharedTx struct {
	store TxStore
	tr    TxTransport
}

func newSharedTx(s *stead.Store, t *transport.Transport) (*sharedTx, error) {
	ts, ok := s.Backend().(TxStore)
	if !ok {
		return nil, fmt.Errorf("runtime: SharedTx needs a store that enlists in transactions (pgstore); %T does not", s.Backend())
	}
	tt, ok := t.Backend().(TxTransport)
	if !ok {
		return nil, fmt.Errorf("runtime: SharedTx needs a transport that enlists in transactions (pgtransport); %T does not", t.Backend())
	}
	return &sharedTx{store: ts, tr: tt}, nil
}

// sharedBatch handles a batch in ONE transaction: claim, load, commit, publish of the emitted
// events and acknowledgement of the messages all commit together, or none of it does (a rollback
// also returns the claimed messages to the queue at once). Emitted events are published inside the
// transaction instead of passing through the store's outbox: the transport's queue is the outbox.
// Spawned children are created after the commit, from the spawn intents that committed with their
// parent. BatchWait does not apply: a transaction is never held open waiting for traffic.
func (w *Worker) sharedBatch(ctx, work context.Context) (int, error) {
	s := w.shared
	tx, err := s.store.Pool().Begin(work)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(work)) }()
	leases, err := w.prioritised(func(minPriority int) ([]transport.Lease, error) {
		return s.tr.ClaimBatchTx(work, tx, w.cfg.Name, w.cfg.Visibility, minPriority, w.cfg.BatchSize)
	})
	if err != nil || len(leases) == 0 {
		return 0, err
	}
	refs := make([]stead.EventRef, len(leases))
	for i, l := range leases {
		refs[i] = stead.EventRef{ExecutionID: l.Group, EventID: l.Event.ID}
	}
	loaded, err := s.store.LoadForEventsTx(work, tx, refs)
	if err != nil {
		// Rolling back releases the claims: the messages are claimable again at once.
		w.log.Warn("batch load failed", slog.Any("err", err))
		sleep(ctx, w.cfg.RetryDelay)
		return len(leases), nil
	}
	p := w.plan(leases, loaded)
	if len(leases) == 1 {
		return 1, w.sharedOne(ctx, work, tx, leases[0], &p)
	}
	emits := make([][]stead.Emit, len(p.items))
	for k := range p.items {
		emits[k] = p.items[k].Bundle.Emits
		p.items[k].Bundle.Emits = nil
	}
	var ds []delivery
	var out []transport.Outgoing
	if len(p.items) > 0 {
		results, err := s.store.CommitBatchTx(work, tx, p.items)
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
		if err := s.tr.PublishBatchTx(work, tx, out); err != nil {
			w.log.Warn("publish in transaction failed", slog.Any("err", err))
			sleep(ctx, w.cfg.RetryDelay)
			return len(leases), nil
		}
	}
	if len(p.acks) > 0 {
		if err := s.tr.AckBatchTx(work, tx, p.acks); err != nil {
			w.log.Warn("ack in transaction failed", slog.Any("err", err))
			sleep(ctx, w.cfg.RetryDelay)
			return len(leases), nil
		}
	}
	for _, q := range p.later {
		if err := s.tr.NackTx(work, tx, &q.lease, w.delay(q.v)); err != nil {
			w.log.Warn("nack in transaction failed", slog.Any("err", err))
			sleep(ctx, w.cfg.RetryDelay)
			return len(leases), nil
		}
	}
	if err := tx.Commit(work); err != nil {
		// With a lost connection the outcome is unknown; either way redelivery is safe (dedupe).
		w.log.Warn("commit failed", slog.Any("err", err))
		return len(leases), nil
	}
	w.spawnCommitted(work, ds)
	return len(leases), nil
}

// spawnCommitted reports the steps a shared transaction committed and creates the children they
// spawned (their emits were published in the transaction already).
func (w *Worker) spawnCommitted(work context.Context, ds []delivery) {
	var spawning []delivery
	for _, d := range ds {
		w.committed(d.exe, d.ev)
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

// sharedOne ends the transaction of a single message in two round trips instead of four: the
// commit of its step, the publish of what the step emitted and the message's ack (or its nack
// when it was not stepped) go to the server together in one pgx.Batch, then COMMIT. A lost CAS
// rolls the whole transaction back, which hands the message back at once: the redelivery a lost
// CAS asks for, and the other statements of the batch are undone with it.
func (w *Worker) sharedOne(ctx, work context.Context, tx pgx.Tx, lease transport.Lease, p *batchPlan) error {
	s := w.shared
	b := &pgx.Batch{}
	var res stead.CommitResult
	var ds []delivery
	switch {
	case len(p.items) == 1:
		it := &p.items[0]
		// The transport's queue is the outbox: the emits are published in the transaction.
		out := addressed(nil, it.Bundle.Emits, it.Execution.Priority)
		it.Bundle.Emits = nil
		err := s.store.QueueCommit(b, it.Execution, it.Bundle, &res)
		if err == nil {
			err = s.tr.QueuePublish(b, out)
		}
		if err != nil {
			// An invalid step (the store refused it, or its emits do not encode): drop what was
			// queued and hand the message back for a retry.
			w.log.Warn("commit failed", slog.String("execution", lease.Group), slog.Any("err", err))
			*b = pgx.Batch{}
			if err := s.tr.QueueNack(b, &lease, w.cfg.RetryDelay); err != nil {
				return err
			}
			break
		}
		if err := s.tr.QueueAck(b, []transport.Lease{lease}); err != nil {
			return err
		}
		ds = append(ds, delivery{exe: it.Execution, b: &it.Bundle, ev: p.events[0]})
	case len(p.acks) == 1:
		if err := s.tr.QueueAck(b, p.acks); err != nil {
			return err
		}
	case len(p.later) == 1:
		if err := s.tr.QueueNack(b, &p.later[0].lease, w.delay(p.later[0].v)); err != nil {
			return err
		}
	}
	if err := tx.SendBatch(work, b).Close(); err != nil {
		w.log.Warn("step in transaction failed", slog.Any("err", err))
		sleep(ctx, w.cfg.RetryDelay)
		return nil
	}
	if errors.Is(res.Err, stead.ErrConflict) {
		w.log.Debug("lost the version race; redelivering", slog.Any("err", res.Err))
		return nil
	}
	if len(ds) == 1 {
		ds[0].exe.Version = res.Version
	}
	if err := tx.Commit(work); err != nil {
		// With a lost connection the outcome is unknown; either way redelivery is safe (dedupe).
		w.log.Warn("commit failed", slog.Any("err", err))
		return nil
	}
	w.spawnCommitted(work, ds)
	return nil
}
