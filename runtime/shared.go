package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// TxStore is a store that can enlist in a caller's PostgreSQL transaction (pgstore.Store).
type TxStore interface {
	Pool() *pgxpool.Pool
	LoadForEventsTx(ctx context.Context, tx pgx.Tx, refs []stead.EventRef) ([]stead.Loaded, error)
	CommitBatchTx(ctx context.Context, tx pgx.Tx, items []stead.CommitItem) ([]stead.CommitResult, error)
}

// TxTransport is a transport that can enlist in a caller's PostgreSQL transaction
// (pgtransport.Transport).
type TxTransport interface {
	ClaimBatchTx(ctx context.Context, tx pgx.Tx, worker string, visibility time.Duration, minPriority, max int) ([]transport.Lease, error)
	AckBatchTx(ctx context.Context, tx pgx.Tx, leases []transport.Lease) error
	PublishBatchTx(ctx context.Context, tx pgx.Tx, msgs []transport.Outgoing) error
	NackTx(ctx context.Context, tx pgx.Tx, l *transport.Lease, delay time.Duration) error
}

type sharedTx struct {
	store TxStore
	tr    TxTransport
}

func newSharedTx(s stead.Store, t transport.Transport) (*sharedTx, error) {
	ts, ok := s.(TxStore)
	if !ok {
		return nil, fmt.Errorf("runtime: SharedTx needs a store that enlists in transactions (pgstore); %T does not", s)
	}
	tt, ok := t.(TxTransport)
	if !ok {
		return nil, fmt.Errorf("runtime: SharedTx needs a transport that enlists in transactions (pgtransport); %T does not", t)
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
	leases, err := s.tr.ClaimBatchTx(work, tx, w.cfg.Name, w.cfg.Visibility, 0, w.cfg.BatchSize)
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
				for _, e := range emits[k] {
					if e.Target != "" {
						out = append(out, transport.Outgoing{Group: e.Target, Event: e.Event, Priority: p.items[k].Execution.Priority})
					}
				}
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
	return len(leases), nil
}
