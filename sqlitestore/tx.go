package sqlitestore

import (
	"context"
	"fmt"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/sqlitedb"
)

// CommitBatchTx is store's CommitBatch inside tx, a write transaction of the database the store
// was opened on (sqlitedb.DB.Begin), for a caller that writes more in the same transaction:
// worker/sqlitetx commits a worker's steps, publishes what they emitted and acknowledges their
// messages in one. The items are checked as the Store checks them (a refused one is its result's
// error, wrapping stead.ErrInvalid, and writes nothing) and are not changed; each result carries
// its item's new version, or its own error: a lost compare-and-swap wraps stead.ErrConflict and
// wrote nothing, and the others go on. Nothing is visible to others before tx commits. An error
// returned here (a store that is not sqlitestore or is on another database is stead.ErrInvalid,
// before anything is written) leaves tx for Rollback only.
func CommitBatchTx(ctx context.Context, store *stead.Store, tx *sqlitedb.Tx, items []stead.CommitItem) ([]stead.CommitResult, error) {
	b, err := txBackend(store, tx)
	if err != nil {
		return nil, err
	}
	ws, results, err := stead.PrepareBatch(items)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: commit batch: %w", err)
	}
	if ws.Len() == 0 {
		return results, nil
	}
	encs, err := encodeAll(ws.W)
	if err != nil {
		return nil, err
	}
	if b.closed.Load() { // under the gate, which tx holds: the statements are still there
		return nil, fmt.Errorf("sqlitestore: %w", stead.ErrClosed)
	}
	out := make([]stead.WriteResult, ws.Len())
	if err := b.applyAll(ctx, &b.w, ws.W, encs, out); err != nil {
		return nil, b.written(ctx, err)
	}
	return ws.Results(results, out)
}

// txBackend returns the backend of store when it is this package's, on tx's database.
func txBackend(store *stead.Store, tx *sqlitedb.Tx) (*backend, error) {
	if store == nil || tx == nil {
		return nil, fmt.Errorf("sqlitestore: %w: nil store or transaction", stead.ErrInvalid)
	}
	b, ok := store.Backend().(*backend)
	if !ok {
		return nil, fmt.Errorf("sqlitestore: %w: the store's backend is %T, not sqlitestore", stead.ErrInvalid, store.Backend())
	}
	if tx.DB() != b.db {
		return nil, fmt.Errorf("sqlitestore: %w: the transaction is of another database", stead.ErrInvalid)
	}
	return b, nil
}

// OnDB reports whether store is a sqlitestore store on db: whether CommitBatchTx takes db's
// transactions for it.
func OnDB(store *stead.Store, db *sqlitedb.DB) bool {
	b, ok := store.Backend().(*backend)
	return ok && b.db == db
}
