package backend

import (
	"context"
	"sync"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// A SQLite database has one writer at a time. The store and the transport each hold their own
// write connection to the file (on DBs of their own until sqlitestore takes the application's
// sqlitedb.DB; then the DB's write gate does what this one does), so in one process they contend
// for that lock, and the loser
// sleeps in SQLite's busy handler (1, 2, 5, 10 … 100 ms back-off) even when the winner is done
// within microseconds. Measured with the benchmark scenario, that contention cost more than
// half the throughput of a worker. The gate serializes the process's writes to the file behind
// one mutex, turning the contention into a queue; reads do not take it, and other processes on
// the same file still meet SQLite's busy handler as before.
type gate struct{ mu sync.Mutex }

func (g *gate) do(f func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return f()
}

// gatedStore is a stead.Store whose writes pass the gate.
type gatedStore struct {
	stead.Store
	g *gate
}

func (s gatedStore) Commit(ctx context.Context, exe *stead.Execution, b stead.Bundle) (seqs []int64, err error) {
	err = s.g.do(func() error { seqs, err = s.Store.Commit(ctx, exe, b); return err })
	return seqs, err
}

func (s gatedStore) CommitBatch(ctx context.Context, items []stead.CommitItem) (res []stead.CommitResult, err error) {
	err = s.g.do(func() error { res, err = s.Store.CommitBatch(ctx, items); return err })
	return res, err
}

func (s gatedStore) AppendTrace(ctx context.Context, id string, step stead.TraceStep) (i int64, err error) {
	err = s.g.do(func() error { i, err = s.Store.AppendTrace(ctx, id, step); return err })
	return i, err
}

func (s gatedStore) Purge(ctx context.Context, id string, v int64) (ok bool, err error) {
	err = s.g.do(func() error { ok, err = s.Store.Purge(ctx, id, v); return err })
	return ok, err
}

func (s gatedStore) ClaimOutbox(ctx context.Context, now time.Time, lease time.Duration, limit int) (es []stead.OutboxEntry, err error) {
	err = s.g.do(func() error { es, err = s.Store.ClaimOutbox(ctx, now, lease, limit); return err })
	return es, err
}

func (s gatedStore) AckOutbox(ctx context.Context, seqs []int64) error {
	return s.g.do(func() error { return s.Store.AckOutbox(ctx, seqs) })
}

func (s gatedStore) ClaimSpawns(ctx context.Context, now time.Time, lease time.Duration, limit int) (es []stead.SpawnEntry, err error) {
	err = s.g.do(func() error { es, err = s.Store.ClaimSpawns(ctx, now, lease, limit); return err })
	return es, err
}

func (s gatedStore) AckSpawns(ctx context.Context, seqs []int64) error {
	return s.g.do(func() error { return s.Store.AckSpawns(ctx, seqs) })
}

func (s gatedStore) DeleteTimer(ctx context.Context, t stead.Timer) (ok bool, err error) {
	err = s.g.do(func() error { ok, err = s.Store.DeleteTimer(ctx, t); return err })
	return ok, err
}

// gatedBackend is a transport backend whose writes (claims included) pass the gate.
type gatedBackend struct {
	transport.Backend
	g *gate
}

func (t gatedBackend) PublishBatch(ctx context.Context, msgs []transport.Outgoing) error {
	return t.g.do(func() error { return t.Backend.PublishBatch(ctx, msgs) })
}

func (t gatedBackend) ClaimBatch(ctx context.Context, worker string, vis time.Duration, minPriority, max int) (ls []transport.Lease, err error) {
	err = t.g.do(func() error { ls, err = t.Backend.ClaimBatch(ctx, worker, vis, minPriority, max); return err })
	return ls, err
}

func (t gatedBackend) AckBatch(ctx context.Context, ls []transport.Lease) error {
	return t.g.do(func() error { return t.Backend.AckBatch(ctx, ls) })
}

func (t gatedBackend) Nack(ctx context.Context, l *transport.Lease, delay time.Duration) error {
	return t.g.do(func() error { return t.Backend.Nack(ctx, l, delay) })
}
