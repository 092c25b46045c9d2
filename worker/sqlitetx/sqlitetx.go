// Package sqlitetx ends a worker's rounds in one SQLite transaction that spans sqlitestore and
// sqlitetransport on one file, for worker.Config.Finisher:
//
//	db, _ := sqlitedb.Open(ctx, sqlitedb.Config{Path: "stead.db"})
//	store, _ := sqlitestore.New(ctx, db)
//	tr, _ := sqlitetransport.New(ctx, db)
//	fin, err := sqlitetx.New(db, store, tr)
//	w, err := worker.New(worker.Config{Store: store, Transport: tr, Machines: m, Finisher: fin})
//
// The commit of the steps that ended, the publish of what they emitted and the acknowledgement
// (or nack) of their messages then run between one BEGIN IMMEDIATE and one COMMIT on the file's
// writer connection, which the store and the transport share (sqlitedb.DB.Begin): one commit
// and one turn of the process's write gate instead of one each for the commit, the publish, the
// outbox's ack and the messages' acks. The claim and the load stay transactions of their own:
// the transaction holds SQLite's one write lock for the round's statements only, never while
// actions run.
package sqlitetx

import (
	"context"
	"fmt"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/sqlitetransport"
	"github.com/steadhq/stead/worker"
)

// DB is a sqlitestore store and a sqlitetransport transport on one SQLite database: a
// worker.Finisher.
type DB struct {
	db    *sqlitedb.DB
	store *stead.Store
	tr    *transport.Transport
}

var _ worker.Finisher = (*DB)(nil)

// New returns the finisher of store and tr, both opened on db. It refuses (stead.ErrInvalid) a
// store that is not sqlitestore, a transport that is not sqlitetransport, or either on another
// database.
func New(db *sqlitedb.DB, store *stead.Store, tr *transport.Transport) (*DB, error) {
	switch {
	case db == nil || store == nil || tr == nil:
		return nil, fmt.Errorf("%w: sqlitetx: the database, the store and the transport must not be nil", stead.ErrInvalid)
	case !sqlitestore.OnDB(store, db):
		return nil, fmt.Errorf("%w: sqlitetx: the store is not sqlitestore on this database (its backend is %T)", stead.ErrInvalid, store.Backend())
	case !sqlitetransport.OnDB(tr, db):
		return nil, fmt.Errorf("%w: sqlitetx: the transport is not sqlitetransport on this database (its backend is %T)", stead.ErrInvalid, tr.Backend())
	}
	return &DB{db: db, store: store, tr: tr}, nil
}

// BeginFinish implements worker.Finisher: it takes the database's write gate and begins a BEGIN
// IMMEDIATE transaction on its writer connection (sqlitedb.DB.Begin), which holds the gate until
// Commit or Rollback.
func (d *DB) BeginFinish(ctx context.Context) (worker.FinishTx, error) {
	tx, err := d.db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlitetx: begin: %w", sqlitedb.Classify(err))
	}
	return &Tx{d: d, tx: tx}, nil
}

// DBSystemName names the database in the worker's spans.
func (d *DB) DBSystemName() string { return "sqlite" }

// Tx is one transaction of a DB: a worker.FinishTx.
type Tx struct {
	d  *DB
	tx *sqlitedb.Tx
}

// CommitBatch implements worker.FinishTx (sqlitestore.CommitBatchTx): what the items still emit
// goes to the store's outbox.
func (t *Tx) CommitBatch(ctx context.Context, items []stead.CommitItem) ([]stead.CommitResult, error) {
	return sqlitestore.CommitBatchTx(ctx, t.d.store, t.tx, items)
}

// Publish implements worker.FinishTx (sqlitetransport.PublishBatchTx).
func (t *Tx) Publish(ctx context.Context, msgs []transport.Outgoing) error {
	return sqlitetransport.PublishBatchTx(ctx, t.d.tr, t.tx, msgs)
}

// Ack implements worker.FinishTx (sqlitetransport.AckBatchTx).
func (t *Tx) Ack(ctx context.Context, ls []transport.Lease) error {
	return sqlitetransport.AckBatchTx(ctx, t.d.tr, t.tx, ls)
}

// Nack implements worker.FinishTx (sqlitetransport.NackTx).
func (t *Tx) Nack(ctx context.Context, l *transport.Lease, delay time.Duration) error {
	return sqlitetransport.NackTx(ctx, t.d.tr, t.tx, l, delay)
}

// Commit implements worker.FinishTx. A ctx done by then rolls back instead, with nothing
// written.
func (t *Tx) Commit(ctx context.Context) error {
	if err := t.tx.Commit(ctx); err != nil {
		return fmt.Errorf("sqlitetx: commit: %w", sqlitedb.Classify(err))
	}
	return nil
}

// Rollback implements worker.FinishTx; after Commit it does nothing.
func (t *Tx) Rollback(context.Context) error {
	t.tx.Rollback()
	return nil
}
