package pgtransport

import (
	"time"

	"github.com/steadhq/stead/pgdb"
)

// DefaultPollInterval is how often an idle Wait re-checks without a notification.
const DefaultPollInterval = 500 * time.Millisecond

// An Option configures Open or New.
type Option func(*config)

type config struct {
	schema         string
	pool           pgdb.Config
	acquireTimeout time.Duration
	migrate        bool
	now            func() time.Time
	poll           time.Duration
	listen         bool
	notify         bool
}

func newConfig(opts []Option) config {
	c := config{migrate: true, now: time.Now, poll: DefaultPollInterval, listen: true, notify: true}
	for _, o := range opts {
		o(&c)
	}
	if c.pool.PgBouncer {
		c.listen = false
	}
	return c
}

// WithSchema keeps every table and function of the transport in the named schema, created by the
// migration if missing. The name must be a plain identifier (letters, digits, underscores); any
// other name makes Open and New fail with an error wrapping stead.ErrInvalid. Without it the
// connection's search_path decides (usually public).
func WithSchema(name string) Option { return func(c *config) { c.schema = name } }

// WithClock sets the clock leases, parks and the round-robin are measured with (default
// time.Now). Every host sharing the database must keep its clock roughly in step.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithPollInterval sets how long Wait blocks at most without a notification (default
// DefaultPollInterval). It bounds how late a worker notices a lease or park that ended.
func WithPollInterval(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.poll = d
		}
	}
}

// WithoutListen turns LISTEN off: Wait only polls. Publishers still notify unless WithoutNotify.
func WithoutListen() Option { return func(c *config) { c.listen = false } }

// WithoutNotify stops this transport's publishes and nacks from sending notifications (waiters
// of this process are still woken directly). PostgreSQL serialises the commits of all
// transactions that notified on one database-wide lock; a fleet that never idles can trade the
// wake-up latency of waiters in other processes (then the poll interval) for that.
func WithoutNotify() Option { return func(c *config) { c.notify = false } }

// WithMaxConns bounds the pool Open creates (default: pgxpool's). The listener uses a connection
// of its own outside the pool. Ignored by New.
func WithMaxConns(n int32) Option { return func(c *config) { c.pool.MaxConns = n } }

// WithStatementTimeout sets statement_timeout on every connection Open creates (default: none).
// A statement that runs out of time fails with an error wrapping stead.ErrTimeout. Ignored by New.
func WithStatementTimeout(d time.Duration) Option {
	return func(c *config) { c.pool.StatementTimeout = d }
}

// WithAcquireTimeout bounds how long a call waits for a free pooled connection (default: as long
// as its context allows). A call that gives up fails with an error wrapping stead.ErrUnavailable.
func WithAcquireTimeout(d time.Duration) Option { return func(c *config) { c.acquireTimeout = d } }

// WithConnectRetry sets how many times Open tries its first connection and the pause between
// tries (default 15 attempts, 1 s apart).
func WithConnectRetry(attempts int, delay time.Duration) Option {
	return func(c *config) {
		c.pool.ConnectAttempts = attempts
		c.pool.ConnectDelay = delay
	}
}

// WithPgBouncer makes the pool Open creates send every statement unnamed, as PgBouncer in
// transaction pooling mode requires, and turns the listener off (LISTEN needs a session): Wait
// polls. Ignored by New except for the listener: configure the application's pool with
// pgx.QueryExecModeExec instead.
func WithPgBouncer() Option { return func(c *config) { c.pool.PgBouncer = true } }

// WithoutMigrate makes Open and New skip the migration, for deployments that run it separately
// (Migrate, or the stead CLI). They then check that the schema is at the version this package
// expects and fail otherwise.
func WithoutMigrate() Option { return func(c *config) { c.migrate = false } }
