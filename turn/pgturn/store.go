package pgturn

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead/internal/errs"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/turn"
)

// Store is the PostgreSQL backend of every turn store role. It is safe for concurrent use, and
// many processes may share one database: every rule the contract states is enforced by a
// constraint or by the predicate of the statement that writes, never by a lock held in this
// process.
type Store struct {
	pool           *pgxpool.Pool
	ownsPool       bool
	schema         string
	acquireTimeout time.Duration
	clock          func() time.Time
	stmts          *statements
	closed         atomic.Bool
}

// Option adjusts a Store.
type Option func(*Store)

// WithClock makes the store stamp the times it owns (phase updates, resolutions, completions,
// invalidations, redactions, receipts) from now instead of the wall clock. Stamps are taken in
// UTC and truncated to microseconds, PostgreSQL's resolution, so they read back equal.
func WithClock(now func() time.Time) Option {
	return func(s *Store) {
		if now != nil {
			s.clock = now
		}
	}
}

// WithSchema names the schema holding the tables, for FromPool (ConnectWith takes
// Config.Schema). An unsafe name makes FromPool fail with ErrInvalid.
func WithSchema(name string) Option { return func(s *Store) { s.schema = name } }

// WithAcquireTimeout bounds the wait for a pooled connection, for FromPool (ConnectWith takes
// Config.AcquireTimeout). Past it a call fails with ErrUnavailable having sent nothing.
func WithAcquireTimeout(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.acquireTimeout = d
		}
	}
}

// Connect opens a pool on url with the default Config.
func Connect(ctx context.Context, url string, opts ...Option) (*Store, error) {
	return ConnectWith(ctx, url, Config{}, opts...)
}

// ConnectWith opens a pool on url configured by c, retrying the first connection (see
// Config.ConnectAttempts). A malformed URL or configuration fails with ErrInvalid, a database
// that never answers with ErrUnavailable. Close closes the pool.
func ConnectWith(ctx context.Context, url string, c Config, opts ...Option) (*Store, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	pool, err := pgdb.Open(ctx, url, c.poolConfig())
	if err != nil {
		return nil, fmt.Errorf("pgturn: %w", err)
	}
	opts = append([]Option{WithSchema(c.Schema), WithAcquireTimeout(c.acquireTimeout())}, opts...)
	s, err := FromPool(pool, opts...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.ownsPool = true
	return s, nil
}

// FromPool uses a pool the caller owns, for an application whose own tables live in the same
// database (see CommitIn). Close leaves the pool open.
func FromPool(pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: pgturn: nil pool", errs.Invalid)
	}
	s := &Store{pool: pool, acquireTimeout: DefaultAcquireTimeout, clock: time.Now}
	for _, o := range opts {
		o(s)
	}
	if s.schema != "" {
		if err := pgdb.CheckSchema(s.schema); err != nil {
			return nil, fmt.Errorf("pgturn: %w", err)
		}
	}
	s.stmts = &statements{schema: s.schema}
	return s, nil
}

// sql returns raw with the store's schema spliced in.
func (s *Store) sql(raw string) string { return s.stmts.get(raw) }

// Pool returns the pool the store runs on.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Schema returns the configured schema, or "" for the connection's search_path.
func (s *Store) Schema() string { return s.schema }

// Close makes every later call fail with ErrClosed and, when the store opened the pool, closes it
// (waiting for connections in use to be released). It always returns nil; it is an io.Closer so
// that it sits beside the project's other stores.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.ownsPool {
		s.pool.Close()
	}
	return nil
}

func (s *Store) open() error {
	if s.closed.Load() {
		return fmt.Errorf("pgturn: %w", errs.Closed)
	}
	return nil
}

// now is the instant the store stamps: UTC, at PostgreSQL's microsecond resolution
// (turn.ClockTime), so that what is written compares equal to what is read back.
func (s *Store) now() time.Time { return turn.ClockTime(s.clock()) }

// acquire takes a pooled connection, waiting at most the acquire timeout. A wait that runs out
// sent nothing, so it is ErrUnavailable whatever cut it short.
func (s *Store) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
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
func (s *Store) read(ctx context.Context, fn func(q querier) error) error {
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
