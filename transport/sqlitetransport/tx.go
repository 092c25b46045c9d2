package sqlitetransport

import (
	"context"
	"fmt"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/transport"
)

// The transport's writes inside a caller's transaction of its database (sqlitedb.DB.Begin), for
// a caller that writes more in the same transaction: worker/sqlitetx commits a worker's steps
// with sqlitestore.CommitBatchTx, publishes what they emitted and acknowledges their messages in
// one. Each checks its arguments as the Transport does (bad input wraps stead.ErrInvalid, with
// nothing written); nothing is visible to others before tx commits, and this process's waiters
// are woken only once it has. An error leaves tx for Rollback only.

// PublishBatchTx is tr's PublishBatch inside tx.
func PublishBatchTx(ctx context.Context, tr *transport.Transport, tx *sqlitedb.Tx, msgs []transport.Outgoing) error {
	b, err := txBackend(tr, tx)
	if err != nil {
		return err
	}
	prepared, err := transport.PreparePublish(msgs)
	if err != nil {
		return err
	}
	if len(prepared) == 0 {
		return nil
	}
	events, err := encodeEvents(prepared)
	if err != nil {
		return err
	}
	created, err := b.publish(ctx, prepared, events)
	if err != nil {
		return fmt.Errorf("sqlitetransport: publish: %w", classify(interrupted(ctx, err)))
	}
	if created {
		tx.AfterCommit(b.sig.Notify)
	}
	return nil
}

// AckBatchTx is tr's AckBatch inside tx.
func AckBatchTx(ctx context.Context, tr *transport.Transport, tx *sqlitedb.Tx, ls []transport.Lease) error {
	b, err := txBackend(tr, tx)
	if err != nil {
		return err
	}
	if err := transport.CheckAck(ls); err != nil {
		return err
	}
	freed, err := b.ack(ctx, ls)
	if err != nil {
		return fmt.Errorf("sqlitetransport: ack: %w", classify(interrupted(ctx, err)))
	}
	if freed {
		tx.AfterCommit(b.sig.Notify)
	}
	return nil
}

// NackTx is tr's Nack inside tx.
func NackTx(ctx context.Context, tr *transport.Transport, tx *sqlitedb.Tx, l *transport.Lease, delay time.Duration) error {
	b, err := txBackend(tr, tx)
	if err != nil {
		return err
	}
	if err := transport.CheckNack(l, delay); err != nil {
		return err
	}
	freed, err := b.nack(ctx, l, delay)
	if err != nil {
		return fmt.Errorf("sqlitetransport: nack: %w", classify(interrupted(ctx, err)))
	}
	if freed {
		tx.AfterCommit(b.sig.Notify)
	}
	return nil
}

// OnDB reports whether tr is a sqlitetransport transport on db: whether the functions above take
// db's transactions for it.
func OnDB(tr *transport.Transport, db *sqlitedb.DB) bool {
	b, ok := tr.Backend().(*backend)
	return ok && b.db == db
}

// txBackend returns the backend of tr when it is this package's, open, on tx's database. Called
// with tx open, so under the gate: a Close after the check waits for tx.
func txBackend(tr *transport.Transport, tx *sqlitedb.Tx) (*backend, error) {
	if tr == nil || tx == nil {
		return nil, fmt.Errorf("sqlitetransport: %w: nil transport or transaction", stead.ErrInvalid)
	}
	b, ok := tr.Backend().(*backend)
	switch {
	case !ok:
		return nil, fmt.Errorf("sqlitetransport: %w: the transport's backend is %T, not sqlitetransport", stead.ErrInvalid, tr.Backend())
	case tx.DB() != b.db:
		return nil, fmt.Errorf("sqlitetransport: %w: the transaction is of another database", stead.ErrInvalid)
	case b.closed.Load():
		return nil, errClosed
	}
	return b, nil
}
