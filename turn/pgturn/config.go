package pgturn

import (
	"fmt"
	"time"

	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/pgdb"
)

// Defaults of Config, chosen for a service handling turns: a small pool with one connection kept
// warm, a bounded wait for a connection, and connections recycled often enough that a rolling
// database upgrade drains cleanly.
const (
	DefaultMaxConns        int32 = 10
	DefaultMinIdleConns    int32 = 1
	DefaultAcquireTimeout        = 5 * time.Second
	DefaultMaxConnIdleTime       = 10 * time.Minute
	DefaultMaxConnLifetime       = 30 * time.Minute
)

// forever stands for "never" where pgxpool wants a duration: a century outlives any process.
const forever = 100 * 365 * 24 * time.Hour

// Config configures the pool ConnectWith opens. The zero value takes every default.
//
// Set StatementTimeout. Without one a single lock wait can hold a pooled connection until the
// pool is empty and every turn fails. It cancels a statement, not a transaction: a cancelled
// statement inside a commit abandons the whole bundle and is reported as ErrTimeout, which the
// contract reads as "re-read and resume by idempotency key", so size it for the largest bundle a
// turn produces, not for the median statement. A few seconds suits a service; leave it zero to
// inherit what the role or the server sets when the database is administered separately. The
// outbox claim never waits on another dispatcher (SKIP LOCKED), so it is never the one to tune.
type Config struct {
	// MaxConns bounds the pool (default DefaultMaxConns).
	MaxConns int32
	// MinIdleConns keeps that many idle connections ready (default DefaultMinIdleConns; negative
	// keeps none).
	MinIdleConns int32
	// AcquireTimeout bounds the wait for a pooled connection; past it a call fails with
	// ErrUnavailable having sent nothing (default DefaultAcquireTimeout). It is not a statement
	// timeout: it does not bound the work done once a connection is held.
	AcquireTimeout time.Duration
	// MaxConnIdleTime closes a connection idle that long (default DefaultMaxConnIdleTime;
	// negative keeps idle connections open).
	MaxConnIdleTime time.Duration
	// MaxConnLifetime recycles a connection that old (default DefaultMaxConnLifetime; negative
	// never recycles).
	MaxConnLifetime time.Duration
	// StatementTimeout is sent as the statement_timeout startup parameter of every connection
	// (default zero: inherit the server's or role's setting). Behind PgBouncer, either list
	// statement_timeout in its ignore_startup_parameters or set the timeout on the role instead.
	StatementTimeout time.Duration
	// Schema holds the tables (default: the connection's search_path). Every statement names it
	// explicitly, so no session state is needed and the store works behind PgBouncer in
	// transaction mode. Migrate creates it.
	Schema string
	// PgBouncer uses only unnamed prepared statements, as transaction pooling requires.
	PgBouncer bool
	// ConnectAttempts and ConnectDelay retry the first connection, so a service started beside
	// its database waits for it (defaults pgdb.DefaultConnectAttempts, DefaultConnectDelay).
	ConnectAttempts int
	ConnectDelay    time.Duration
}

// Validate refuses a configuration that cannot work: negative bounds, fewer connections allowed
// than kept idle, an unsafe schema name. The error wraps ErrInvalid.
func (c Config) Validate() error {
	if c.MaxConns < 0 {
		return check.Invalidf("pgturn: MaxConns is negative (%d)", c.MaxConns)
	}
	if c.AcquireTimeout < 0 {
		return check.Invalidf("pgturn: AcquireTimeout is negative (%s)", c.AcquireTimeout)
	}
	if c.StatementTimeout < 0 {
		return check.Invalidf("pgturn: StatementTimeout is negative (%s)", c.StatementTimeout)
	}
	if c.StatementTimeout > 0 && c.StatementTimeout < time.Millisecond {
		return check.Invalidf("pgturn: StatementTimeout %s is below PostgreSQL's resolution of 1ms", c.StatementTimeout)
	}
	if c.ConnectAttempts < 0 {
		return check.Invalidf("pgturn: ConnectAttempts is negative (%d)", c.ConnectAttempts)
	}
	if min, max := c.bounds(); min > max {
		return check.Invalidf("pgturn: MinIdleConns %d exceeds MaxConns %d", min, max)
	}
	if c.Schema != "" {
		if err := pgdb.CheckSchema(c.Schema); err != nil {
			return fmt.Errorf("pgturn: %w", err)
		}
	}
	return nil
}

// bounds returns the effective idle minimum and connection maximum.
func (c Config) bounds() (minIdle, max int32) {
	max, minIdle = c.MaxConns, c.MinIdleConns
	if max == 0 {
		max = DefaultMaxConns
	}
	switch {
	case minIdle == 0:
		minIdle = min(DefaultMinIdleConns, max)
	case minIdle < 0:
		minIdle = 0
	}
	return minIdle, max
}

func (c Config) acquireTimeout() time.Duration {
	if c.AcquireTimeout == 0 {
		return DefaultAcquireTimeout
	}
	return c.AcquireTimeout
}

// poolConfig translates c for pgdb.Connect.
func (c Config) poolConfig() pgdb.Config {
	minIdle, max := c.bounds()
	return pgdb.Config{
		MaxConns:         max,
		MinIdleConns:     minIdle,
		MaxConnIdleTime:  orDefault(c.MaxConnIdleTime, DefaultMaxConnIdleTime),
		MaxConnLifetime:  orDefault(c.MaxConnLifetime, DefaultMaxConnLifetime),
		StatementTimeout: c.StatementTimeout,
		ConnectAttempts:  c.ConnectAttempts,
		ConnectDelay:     c.ConnectDelay,
		PgBouncer:        c.PgBouncer,
	}
}

func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return forever
	}
	return d
}

// String describes the pool without the connection URL (which may carry a password).
func (c Config) String() string {
	minIdle, max := c.bounds()
	schema := c.Schema
	if schema == "" {
		schema = "<search_path>"
	}
	return fmt.Sprintf("pool %d..%d, schema %s", minIdle, max, schema)
}
