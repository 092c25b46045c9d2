// Package pgtx runs a worker's batches in one PostgreSQL transaction that spans pgstore and
// pgtransport, for worker.Config.SharedTx:
//
//	pool, _ := pgdb.Open(ctx, url, pgdb.Config{})
//	store, _ := pgstore.New(ctx, pool)
//	tr, _ := pgtransport.New(ctx, pool)
//	shared, err := pgtx.New(store, tr)
//	w, err := worker.New(worker.Config{Store: store, Transport: tr, Machines: m, SharedTx: shared})
//
// The claim, the load, the commit of every step, the publish of what the steps emitted and the
// acknowledgement of the messages then commit together, or none of them does: one commit instead
// of three per batch, and a message is acknowledged if and only if its step lands. The store and
// the transport must share one pool (so one database); the transaction runs at READ COMMITTED,
// PostgreSQL's default, which pgtransport's claims need.
package pgtx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/worker"
)

// DB is a pgstore store and a pgtransport transport on one pool: a worker.SharedDB.
type DB struct {
	pool  *pgxpool.Pool
	store *pgstore.Backend
	tr    *pgtransport.Backend
}

var _ worker.SharedDB = (*DB)(nil)

// New returns the shared database of store and tr. It refuses (stead.ErrInvalid) a store that is
// not pgstore, a transport that is not pgtransport, or two that do not share one pool.
func New(store *stead.Store, tr *transport.Transport) (*DB, error) {
	if store == nil || tr == nil {
		return nil, fmt.Errorf("%w: pgtx: the store and the transport must not be nil", stead.ErrInvalid)
	}
	sb, ok := store.Backend().(*pgstore.Backend)
	if !ok {
		return nil, fmt.Errorf("%w: pgtx: the store's backend is %T, not pgstore", stead.ErrInvalid, store.Backend())
	}
	tb, ok := tr.Backend().(*pgtransport.Backend)
	if !ok {
		return nil, fmt.Errorf("%w: pgtx: the transport's backend is %T, not pgtransport", stead.ErrInvalid, tr.Backend())
	}
	if sb.Pool() != tb.Pool() {
		return nil, fmt.Errorf("%w: pgtx: the store and the transport must share one pool", stead.ErrInvalid)
	}
	return &DB{pool: sb.Pool(), store: sb, tr: tb}, nil
}

// Begin starts a transaction on the shared pool. When ctx has a deadline, the server ends the
// transaction, rolling it back, once it has been idle (waiting for its client) or one of its
// statements has run for longer than the time left until that deadline at Begin: both
// idle_in_transaction_session_timeout and statement_timeout are set to it for this transaction
// only (SET LOCAL, in the BEGIN's round trip). A client that stops answering — a hung or stopped
// process, whose context never fires — so loses the transaction, and the groups it claimed in it
// are claimable again, instead of holding them for as long as it hangs. (PostgreSQL before 17
// has no transaction_timeout; these two bound the same thing for a client that stopped.)
func (d *DB) Begin(ctx context.Context) (worker.Tx, error) {
	var opts pgx.TxOptions
	if dl, ok := ctx.Deadline(); ok {
		ms := max(time.Until(dl).Milliseconds(), 1)
		opts.BeginQuery = fmt.Sprintf("BEGIN; SET LOCAL idle_in_transaction_session_timeout = %d; "+
			"SET LOCAL statement_timeout = %d", ms, ms)
	}
	tx, err := d.pool.BeginTx(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("pgtx: begin: %w", pgdb.Classify(err))
	}
	return &Tx{db: d, tx: tx}, nil
}

// Tx is one transaction of a DB: a worker.Tx.
type Tx struct {
	db *DB
	tx pgx.Tx
}

var _ worker.Tx = (*Tx)(nil)

// Claim implements worker.Tx.
func (t *Tx) Claim(ctx context.Context, worker string, visibility time.Duration, minPriority, max int) ([]transport.Lease, error) {
	return t.db.tr.ClaimBatchTx(ctx, t.tx, worker, visibility, minPriority, max)
}

// Load implements worker.Tx.
func (t *Tx) Load(ctx context.Context, refs []stead.EventRef) ([]stead.Loaded, error) {
	return t.db.store.LoadForEventsTx(ctx, t.tx, refs)
}

// CommitBatch implements worker.Tx.
func (t *Tx) CommitBatch(ctx context.Context, items []stead.CommitItem) ([]stead.CommitResult, error) {
	return t.db.store.CommitBatchTx(ctx, t.tx, items)
}

// Publish implements worker.Tx.
func (t *Tx) Publish(ctx context.Context, msgs []transport.Outgoing) error {
	return t.db.tr.PublishBatchTx(ctx, t.tx, msgs)
}

// Ack implements worker.Tx.
func (t *Tx) Ack(ctx context.Context, ls []transport.Lease) error {
	return t.db.tr.AckBatchTx(ctx, t.tx, ls)
}

// Nack implements worker.Tx.
func (t *Tx) Nack(ctx context.Context, l *transport.Lease, delay time.Duration) error {
	return t.db.tr.NackTx(ctx, t.tx, l, delay)
}

// Step queues the commit, the publish and the ack on one pgx.Batch, so that they reach the server
// in one round trip.
func (t *Tx) Step(ctx context.Context, item stead.CommitItem, emitted []transport.Outgoing, l *transport.Lease) (stead.CommitResult, error) {
	if l == nil {
		return stead.CommitResult{}, fmt.Errorf("%w: pgtx: step without a lease", stead.ErrInvalid)
	}
	b := &pgx.Batch{}
	var res stead.CommitResult
	if err := t.db.store.QueueCommit(b, item.Execution, item.Bundle, &res); err != nil {
		return stead.CommitResult{}, err
	}
	if err := t.db.tr.QueuePublish(b, emitted); err != nil {
		return stead.CommitResult{}, err
	}
	if err := t.db.tr.QueueAck(b, []transport.Lease{*l}); err != nil {
		return stead.CommitResult{}, err
	}
	if err := t.tx.SendBatch(ctx, b).Close(); err != nil {
		return stead.CommitResult{}, fmt.Errorf("pgtx: step: %w", pgdb.Classify(err))
	}
	return res, nil
}

// Commit implements worker.Tx.
func (t *Tx) Commit(ctx context.Context) error {
	if err := t.tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgtx: commit: %w", pgdb.Classify(err))
	}
	return nil
}

// Rollback implements worker.Tx.
func (t *Tx) Rollback(ctx context.Context) error {
	err := t.tx.Rollback(ctx)
	if errors.Is(err, pgx.ErrTxClosed) {
		return nil
	}
	return pgdb.Classify(err)
}

// DBSystemName names the database in the worker's spans (the semantic conventions'
// db.system.name).
func (d *DB) DBSystemName() string { return "postgresql" }
