package pgutil

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead/internal/errs"
)

// PoolConfig are the pool settings every stead PostgreSQL backend exposes. Zero values take the
// defaults documented on each field.
type PoolConfig struct {
	// MaxConns bounds the pool (default: pgxpool's, the larger of 4 and the number of CPUs).
	MaxConns int32
	// MinConns keeps that many connections open (default 0).
	MinConns int32
	// MinIdleConns keeps that many idle connections ready, opening more as they are taken (default 0).
	MinIdleConns int32
	// MaxConnLifetime and MaxConnIdleTime recycle connections (defaults: pgxpool's, 1 h and 30 min).
	MaxConnLifetime time.Duration
	MaxConnIdleTime time.Duration
	// StatementTimeout is set as the statement_timeout of every connection (default: none).
	StatementTimeout time.Duration
	// ConnectAttempts is how many times the first connection is tried (default 15).
	ConnectAttempts int
	// ConnectDelay is the pause between attempts (default 1 s).
	ConnectDelay time.Duration
	// PgBouncer makes every query use the unnamed prepared statement, which works through PgBouncer
	// in transaction pooling mode (no named statements survive across transactions there).
	PgBouncer bool
}

// Defaults for PoolConfig.
const (
	DefaultConnectAttempts = 15
	DefaultConnectDelay    = time.Second
)

// Connect opens a pool on dsn and waits until one connection succeeds, retrying up to
// ConnectAttempts times, ConnectDelay apart, so a worker started beside its database waits instead
// of failing. It honours ctx. After the last attempt the error wraps errs.Unavailable; a malformed
// dsn wraps errs.Invalid at once.
func Connect(ctx context.Context, dsn string, c PoolConfig) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
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
		if ctx.Err() != nil {
			break
		}
	}
	pool.Close()
	return nil, fmt.Errorf("%w: connect to PostgreSQL failed after %d attempts: %v", errs.Unavailable, attempts, last)
}
