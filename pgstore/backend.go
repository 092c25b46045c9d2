package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/pgdb"
)

// Backend is the PostgreSQL stead.Backend behind the Store that New returns. Reach it with
// store.Backend().(*pgstore.Backend) for what only PostgreSQL offers: loading and committing
// inside a transaction shared with pgtransport (LoadForEventsTx, LoadForEventsQuery and
// ScanLoaded, CommitBatchTx) and queueing a commit on its pgx.Batch (QueueCommitGuarded), which
// exist for worker/pgtx. Those check their
// arguments exactly as the Store does and never change them.
//
// Its stead.Backend methods (Load, Commit, …) are the Store's to call: they assume arguments the
// Store has checked and normalised. Call the Store's methods instead.
type Backend struct {
	pool     *pgxpool.Pool
	schema   string
	traceCap int64
	st       statements
	closed   atomic.Bool
	finish   *finishHub
}

var (
	_ stead.Backend          = (*Backend)(nil)
	_ stead.Counter          = (*Backend)(nil)
	_ stead.AttributeBackend = (*Backend)(nil)
)

// New returns the execution store on the application's pool. It migrates the schema first
// (safe from many processes at once), or, with WithoutMigrate, checks that the schema is at the
// version this package needs and fails otherwise. The store never closes the pool: close it
// after the store. A nil pool or an unsafe schema name is an error wrapping stead.ErrInvalid.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*stead.Store, error) {
	if pool == nil {
		return nil, check.Invalidf("pgstore: nil pool")
	}
	cfg := newConfig(opts)
	if cfg.schema != "" {
		if err := pgdb.CheckSchema(cfg.schema); err != nil {
			return nil, fmt.Errorf("pgstore: %w", err)
		}
	}
	st, err := newStatements(cfg.schema)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	b := &Backend{pool: pool, schema: cfg.schema, traceCap: int64(cfg.traceCap), st: st, finish: newFinishHub()}
	if cfg.migrate {
		err = pgdb.Migrate(ctx, pool, cfg.schema, migrationTable, migrations())
	} else {
		err = b.checkVersion(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	return stead.NewStore(b), nil
}

// Pool returns the pool the store runs on, the application's: begin the transactions of
// LoadForEventsTx and CommitBatchTx on it.
func (b *Backend) Pool() *pgxpool.Pool { return b.pool }

// PriorityQuery is a scalar SQL query for the priority of the execution whose id is its
// parameter $4 (NULL when there is none), for worker/pgtx, which sends an event at its
// execution's priority in the publish's own statement (pgtransport's PublishPriced numbers the
// parameters it is given from $4). The store keeps no column for the priority: it is read from
// the execution's document, and an execution's priority never changes.
func (b *Backend) PriorityQuery() string {
	return `SELECT COALESCE((e.data::json->>'priority')::int, 0) FROM ` + pgdb.Qualifier(b.schema) +
		`stead_executions e WHERE e.id = $4::text`
}

// Close marks the backend closed, so that its transaction methods refuse further calls with
// stead.ErrClosed, and stops the listener of WatchFinished. It does not close the pool.
func (b *Backend) Close() error {
	b.closed.Store(true)
	b.finish.close()
	return nil
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationTable records which migrations of this package a schema has.
const migrationTable = "stead_migrations"

// migrations returns the embedded migrations in version order.
func migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded: it is always there
	}
	return sub
}

// checkVersion refuses a schema that is not at the latest migration: an older one lacks what
// this build sends, a newer one may have changed what it relies on.
func (b *Backend) checkVersion(ctx context.Context) error {
	want, err := pgdb.LatestVersion(migrations())
	if err != nil {
		return err
	}
	have, err := pgdb.AppliedVersion(ctx, b.pool, b.schema, migrationTable)
	if err != nil {
		return fmt.Errorf("check schema version: %w", err)
	}
	switch {
	case have < want:
		return fmt.Errorf("schema %q is at migration %d, this build needs %d: migrate it (pgstore.New without WithoutMigrate)", b.schema, have, want)
	case have > want:
		return fmt.Errorf("schema %q is at migration %d, newer than this build knows (%d)", b.schema, have, want)
	}
	return nil
}

// querier is what the store runs statements on: a pooled connection or a caller's transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// with runs fn on a pooled connection. Every statement the store sends is a single statement
// outside an explicit transaction, so PostgreSQL runs it as its own implicit transaction: each
// call costs one round-trip and every read ends its transaction, seeing all earlier commits. A
// commit with AlsoProcessed sends its two statements as one batch, which PostgreSQL runs as one
// implicit transaction too (sendAlso).
//
// Failing to get a connection is ErrUnavailable (nothing was sent); errors from fn are
// classified by pgdb.Classify and wrapped with op.
func (b *Backend) with(ctx context.Context, op string, fn func(q querier) error) error {
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("pgstore: %s: %w: %w", op, stead.ErrUnavailable, context.Cause(ctx))
		}
		return fmt.Errorf("pgstore: %s: %w", op, unavailable(err))
	}
	defer conn.Release()
	if err := fn(conn); err != nil {
		return fmt.Errorf("pgstore: %s: %w", op, pgdb.Classify(err))
	}
	return nil
}

// onTx runs fn on the caller's transaction, for the methods that enlist in one.
func onTx(op string, tx pgx.Tx, fn func(q querier) error) error {
	if err := fn(tx); err != nil {
		return fmt.Errorf("pgstore: %s: %w", op, pgdb.Classify(err))
	}
	return nil
}

// enter refuses a transaction method's call on a closed store: those calls do not pass the
// Store, which refuses the others.
func (b *Backend) enter(op string) error {
	if b.closed.Load() {
		return fmt.Errorf("pgstore: %s: %w", op, stead.ErrClosed)
	}
	return nil
}

// unavailable classifies a failure to obtain a connection: whatever went wrong, nothing was sent.
func unavailable(err error) error {
	c := pgdb.Classify(err)
	if errors.Is(c, stead.ErrUnavailable) || errors.Is(c, stead.ErrClosed) {
		return c
	}
	return fmt.Errorf("%w: acquire connection: %w", stead.ErrUnavailable, err)
}
