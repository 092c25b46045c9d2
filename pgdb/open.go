package pgdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/internal/errs"
)

// Config holds the pool settings every stead PostgreSQL package shares, defined once here. Zero
// values take the defaults documented on each field.
type Config struct {
	// MaxConns bounds the pool (default: pgxpool's, the larger of 4 and the number of CPUs).
	MaxConns int32
	// MinConns keeps that many connections open (default 0).
	MinConns int32
	// MinIdleConns keeps that many idle connections ready, opening more as they are taken (default 0).
	MinIdleConns int32
	// MaxConnLifetime and MaxConnIdleTime recycle connections (defaults: pgxpool's, 1 h and 30 min).
	MaxConnLifetime time.Duration
	MaxConnIdleTime time.Duration
	// StatementTimeout is set as the statement_timeout of every connection (default: none). It
	// travels as a startup parameter, which PgBouncer refuses: with PgBouncer set it is refused
	// (stead.ErrInvalid); set statement_timeout on the database role there instead.
	StatementTimeout time.Duration
	// ConnectAttempts is how many times the first connection is tried (default 15).
	ConnectAttempts int
	// ConnectDelay is the pause between attempts (default 1 s).
	ConnectDelay time.Duration
	// PgBouncer makes every query use the unnamed prepared statement, which works through PgBouncer
	// in transaction pooling mode (no named statements survive across transactions there). A pool
	// without it behind such a pooler fails its statements with an error wrapping
	// stead.ErrInvalid that names this setting. LISTEN needs a session PgBouncer does not keep:
	// give pgtransport a direct connection for it (pgtransport.WithListenURL).
	PgBouncer bool
}

// Defaults for Config.
const (
	DefaultConnectAttempts = 15
	DefaultConnectDelay    = time.Second
)

// Open opens a pool on the database at url and waits until one connection succeeds, retrying up
// to ConnectAttempts times, ConnectDelay apart, so that a worker started beside its database waits
// instead of failing. It honours ctx. The pool is the caller's: hand it to pgstore.New,
// pgtransport.New and pgturn.New, and close it after them. After the last attempt the error wraps
// stead.ErrUnavailable; a malformed url or a negative setting wraps stead.ErrInvalid at once.
func Open(ctx context.Context, url string, c Config) (*pgxpool.Pool, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%w: parse PostgreSQL URL: %v", errs.Invalid, err)
	}
	if c.MaxConns > 0 {
		cfg.MaxConns = c.MaxConns
	}
	if c.MinConns > 0 {
		cfg.MinConns = c.MinConns
	}
	if c.MinIdleConns > 0 {
		cfg.MinIdleConns = c.MinIdleConns
	}
	if c.MaxConnLifetime > 0 {
		cfg.MaxConnLifetime = c.MaxConnLifetime
	}
	if c.MaxConnIdleTime > 0 {
		cfg.MaxConnIdleTime = c.MaxConnIdleTime
	}
	if c.StatementTimeout > 0 {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(c.StatementTimeout.Milliseconds(), 10)
	}
	if c.PgBouncer {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	attempts, delay := c.ConnectAttempts, c.ConnectDelay
	if attempts <= 0 {
		attempts = DefaultConnectAttempts
	}
	if delay <= 0 {
		delay = DefaultConnectDelay
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errs.Invalid, err)
	}
	var last error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				pool.Close()
				return nil, fmt.Errorf("%w: connect cancelled after %d attempts: %w", errs.Unavailable, i, ctx.Err())
			case <-t.C:
			}
		}
		if last = pool.Ping(ctx); last == nil {
			return pool, nil
		}
		if err := Classify(last); errors.Is(err, errs.Invalid) {
			// A configuration error (a startup parameter PgBouncer refuses): no retry fixes it.
			pool.Close()
			return nil, fmt.Errorf("pgdb: connect: %w", err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	pool.Close()
	return nil, fmt.Errorf("%w: connect to PostgreSQL failed after %d attempts: %v", errs.Unavailable, attempts, last)
}

// Validate refuses negative settings, which pgxpool would otherwise take for "the default" or
// fail on much later.
func (c Config) Validate() error {
	switch {
	case c.MaxConns < 0, c.MinConns < 0, c.MinIdleConns < 0:
		return check.Invalidf("pgdb: negative pool size (max %d, min %d, min idle %d)", c.MaxConns, c.MinConns, c.MinIdleConns)
	case c.MaxConns > 0 && c.MinConns > c.MaxConns:
		return check.Invalidf("pgdb: min conns %d above max conns %d", c.MinConns, c.MaxConns)
	case c.MaxConnLifetime < 0, c.MaxConnIdleTime < 0, c.StatementTimeout < 0, c.ConnectDelay < 0:
		return check.Invalidf("pgdb: negative duration in the pool settings")
	case c.ConnectAttempts < 0:
		return check.Invalidf("pgdb: negative connect attempts %d", c.ConnectAttempts)
	case c.PgBouncer && c.StatementTimeout > 0:
		// PgBouncer refuses the startup parameter the timeout travels in, at every connect.
		return check.Invalidf("pgdb: StatementTimeout cannot travel through PgBouncer (it refuses " +
			"startup parameters): set statement_timeout on the database role instead " +
			"(ALTER ROLE ... SET statement_timeout)")
	}
	return nil
}
