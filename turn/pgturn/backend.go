package pgturn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead/internal/errs"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/turn"
)

// Backend is the PostgreSQL backend of every turn role. It is safe for concurrent use, and many
// processes may share one database: every rule the contract states is enforced by a constraint or
// by the predicate of the statement that writes, never by a lock held in this process. It
// assumes the checked front of turn.NewStores before it: New returns that front, and
// Stores.Backend reaches this type for CommitIn.
type Backend struct {
	pool           *pgxpool.Pool
	schema         string
	acquireTimeout time.Duration
	clock          func() time.Time
	st             statements // every statement, expanded with the schema
}

var _ turn.Backend = (*Backend)(nil)

// New returns the checked Stores of a PostgreSQL backend on pool, which the application owns:
// closing the Stores never closes it, and the application's own tables may live in the same
// database (see CommitIn). Open one with pgdb.Open, where the pool settings are (size, statement
// timeout, PgBouncer mode, connect retry). Unless WithoutMigrate is given, New migrates the
// schema first, which is safe on every start-up and from many processes at once.
//
// A nil pool or an unsafe schema name is ErrInvalid; a database that cannot be reached is
// ErrUnavailable.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (turn.Stores, error) {
	if pool == nil {
		return turn.Stores{}, fmt.Errorf("%w: pgturn: nil pool", errs.Invalid)
	}
	cfg := newConfig(opts)
	if cfg.schema != "" {
		if err := pgdb.CheckSchema(cfg.schema); err != nil {
			return turn.Stores{}, fmt.Errorf("pgturn: %w", err)
		}
	}
	b := &Backend{pool: pool, schema: cfg.schema, acquireTimeout: cfg.acquireTimeout, clock: cfg.clock}
	if err := pgdb.ExpandByName(&b.st, statementTexts, cfg.schema); err != nil {
		return turn.Stores{}, fmt.Errorf("pgturn: %w", err)
	}
	check := b.migrate
	if !cfg.migrate {
		check = b.checkSchema
	}
	if err := check(ctx); err != nil {
		return turn.Stores{}, err
	}
	return turn.NewStores(b), nil
}

// now is the instant the backend stamps: UTC, at PostgreSQL's microsecond resolution
// (turn.ClockTime), so that what is written compares equal to what is read back.
func (s *Backend) now() time.Time { return turn.ClockTime(s.clock()) }

// acquire takes a pooled connection, waiting at most the acquire timeout. A wait that runs out
// sent nothing, so it is ErrUnavailable whatever cut it short.
func (s *Backend) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	actx, cancel := context.WithTimeout(ctx, s.acquireTimeout)
	defer cancel()
	conn, err := s.pool.Acquire(actx)
	if err != nil {
		if c := pgdb.Classify(err); errors.Is(c, errs.Closed) {
			return nil, fmt.Errorf("pgturn: %w", c)
		}
		return nil, fmt.Errorf("%w: pgturn: no connection within %s: %w", errs.Unavailable, s.acquireTimeout, err)
	}
	return conn, nil
}

// read runs fn on a pooled connection outside any explicit transaction: each statement commits
// on its own, so the next read sees every commit that finished before it began.
func (s *Backend) read(ctx context.Context, fn func(q querier) error) error {
	conn, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	return fn(conn)
}

// querier is what the statements of this package need: a pooled connection for reads, a
// transaction for writes.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// rollbackTimeout bounds a rollback that runs after the caller's context is done.
const rollbackTimeout = 5 * time.Second

// rollback abandons tx. It runs even when ctx is done, briefly: a connection returned to the pool
// must not be left inside a transaction (pgx closes it if the rollback fails).
func rollback(ctx context.Context, tx pgx.Tx) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	_ = tx.Rollback(rctx)
}
