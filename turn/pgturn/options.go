package pgturn

import "time"

// DefaultAcquireTimeout bounds the wait for a pooled connection unless WithAcquireTimeout says
// otherwise: long enough to ride out a burst, short enough that an exhausted pool fails a turn
// instead of hanging it.
const DefaultAcquireTimeout = 5 * time.Second

// Option configures New.
type Option func(*config)

type config struct {
	schema         string
	clock          func() time.Time
	acquireTimeout time.Duration
	migrate        bool
}

func newConfig(opts []Option) config {
	c := config{clock: time.Now, acquireTimeout: DefaultAcquireTimeout, migrate: true}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithSchema keeps the tables in the named schema, which New creates when it migrates (default:
// the connection's search_path). Every statement names the schema, so no session state is needed
// and the backend works behind PgBouncer in transaction mode. A name that is not a plain
// identifier makes New fail with ErrInvalid.
func WithSchema(name string) Option { return func(c *config) { c.schema = name } }

// WithClock makes the backend stamp the times it owns (phase updates, resolutions, completions,
// invalidations, redactions, receipts) from now instead of time.Now. Stamps are taken in UTC and
// truncated to microseconds, PostgreSQL's resolution, so they read back equal.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.clock = now
		}
	}
}

// WithAcquireTimeout bounds the wait for a pooled connection (default DefaultAcquireTimeout):
// past it a call fails with ErrUnavailable having sent nothing. It is not a statement timeout,
// which is a pool setting (pgdb.Config.StatementTimeout).
func WithAcquireTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.acquireTimeout = d
		}
	}
}

// WithoutMigrate makes New leave the schema alone, for deployments that migrate in a job of
// their own (a New without this option): New then only checks that the schema is at the version
// this build needs.
func WithoutMigrate() Option { return func(c *config) { c.migrate = false } }
