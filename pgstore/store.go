package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/internal/pgstoresql"
	"github.com/steadhq/stead/pgdb"
)

// Store is the PostgreSQL execution store. It is safe for concurrent use, and any number of
// Stores in any number of processes may share one database.
type Store struct {
	pool     *pgxpool.Pool
	ownsPool bool
	cfg      config
	sql      pgstoresql.Statements
	closed   atomic.Bool
}

var _ stead.Store = (*Store)(nil)

// Open connects to the database at dsn, retrying the first connection (see WithConnectRetry),
// migrates the schema unless WithoutMigrate is given, and returns a Store that owns its pool:
// Close closes it. A malformed dsn or an unsafe schema name is an error wrapping stead.ErrInvalid;
// a database that never answered is stead.ErrUnavailable.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	cfg := newConfig(opts)
	if err := checkSchema(cfg.schema); err != nil {
		return nil, err
	}
	pool, err := pgdb.Open(ctx, dsn, cfg.pool)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}
	s := &Store{pool: pool, ownsPool: true, cfg: cfg, sql: pgstoresql.New(cfg.schema)}
	if cfg.migrate {
		err = s.Migrate(ctx)
	} else {
		err = s.CheckSchema(ctx)
	}
	if err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// New returns a Store on a pool the application already has. It does no I/O: call Migrate
// before first use (or CheckSchema, where migrations run separately). Close does not close the
// pool. Pool options (WithMaxConns, WithStatementTimeout, WithConnectRetry, WithPgBouncer) and
// WithoutMigrate are ignored: the pool is the application's, and New never migrates.
func New(pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	if pool == nil {
		return nil, check.Invalidf("pgstore: nil pool")
	}
	cfg := newConfig(opts)
	if err := checkSchema(cfg.schema); err != nil {
		return nil, err
	}
	return &Store{pool: pool, cfg: cfg, sql: pgstoresql.New(cfg.schema)}, nil
}

func checkSchema(schema string) error {
	if schema == "" {
		return nil
	}
	if err := pgdb.CheckSchema(schema); err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	return nil
}

// Pool returns the store's pool, for callers that enlist the store in their own transactions
// (CommitBatchTx, LoadForEventsTx).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Schema returns the schema the store's objects live in ("" for the search_path).
func (s *Store) Schema() string { return s.cfg.schema }

// Close marks the store closed (later calls fail with stead.ErrClosed) and, when Open created
// the pool, closes it, waiting for calls in flight to return their connections.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.ownsPool {
		s.pool.Close()
	}
	return nil
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationTable records which migrations of this package a schema has.
const migrationTable = "stead_store_migrations"

// migrations returns the embedded migrations in version order.
func migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded: it is always there
	}
	return sub
}

// Migrate brings the schema to the version this package expects. It is idempotent and safe to
// run from many processes at once: an advisory lock serialises them, and the ones that wait find
// nothing left to do. Open and New call it unless WithoutMigrate is given.
func (s *Store) Migrate(ctx context.Context) error {
	if s.closed.Load() {
		return stead.ErrClosed
	}
	if err := pgdb.Migrate(ctx, s.pool, s.cfg.schema, migrationTable, migrations()); err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	return nil
}

// CheckSchema verifies, without DDL, that the schema is at the migration version this package
// needs, for deployments that migrate separately. Open calls it under WithoutMigrate.
func (s *Store) CheckSchema(ctx context.Context) error {
	if s.closed.Load() {
		return stead.ErrClosed
	}
	want, err := pgdb.LatestVersion(migrations())
	if err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	have, err := pgdb.AppliedVersion(ctx, s.pool, s.cfg.schema, migrationTable)
	if err != nil {
		return fmt.Errorf("pgstore: check schema version: %w", err)
	}
	if have < want {
		return fmt.Errorf("pgstore: schema %q is at version %d, this build needs %d: run Migrate", s.cfg.schema, have, want)
	}
	return nil
}

// querier is what the store runs statements on: a pooled connection or a caller's transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// with runs fn on a pooled connection. Every statement the store sends is a single statement
// outside an explicit transaction, so PostgreSQL runs it as its own implicit transaction: each
// call costs one round-trip and every read ends its transaction, seeing all earlier commits.
//
// Failing to get a connection is ErrUnavailable (nothing was sent); errors from fn are
// classified by pgdb.Classify and wrapped with op.
func (s *Store) with(ctx context.Context, op string, fn func(q querier) error) error {
	if s.closed.Load() {
		return fmt.Errorf("pgstore: %s: %w", op, stead.ErrClosed)
	}
	actx := ctx
	if s.cfg.acquireTimeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, s.cfg.acquireTimeout)
		defer cancel()
	}
	conn, err := s.pool.Acquire(actx)
	if err != nil {
		if s.closed.Load() {
			return fmt.Errorf("pgstore: %s: %w", op, stead.ErrClosed)
		}
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

// unavailable classifies a failure to obtain a connection: whatever went wrong, nothing was sent.
func unavailable(err error) error {
	c := pgdb.Classify(err)
	if errors.Is(c, stead.ErrUnavailable) || errors.Is(c, stead.ErrClosed) {
		return c
	}
	return fmt.Errorf("%w: acquire connection: %w", stead.ErrUnavailable, err)
}

// micros is the precision PostgreSQL keeps; every time the store writes is truncated to it so
// that what Load and List return agree with each other.
const micros = time.Microsecond
