package pgstore

import (
	"time"

	"github.com/steadhq/stead/pgdb"
)

// DefaultTraceCap is how many trace steps each execution keeps unless WithTraceCap says otherwise.
const DefaultTraceCap = 200

// An Option configures Open or New.
type Option func(*config)

type config struct {
	schema         string
	pool           pgdb.Config
	acquireTimeout time.Duration
	traceCap       int
	migrate        bool
}

func newConfig(opts []Option) config {
	c := config{traceCap: DefaultTraceCap, migrate: true}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithSchema keeps every table and function of the store in the named schema, created by the
// migration if missing. The name must be a plain identifier (letters, digits, underscores); any
// other name makes Open and New fail with an error wrapping stead.ErrInvalid. Without it the
// connection's search_path decides (usually public).
func WithSchema(name string) Option { return func(c *config) { c.schema = name } }

// WithMaxConns bounds the pool Open creates (default: pgxpool's, the larger of 4 and the number
// of CPUs). Ignored by New.
func WithMaxConns(n int32) Option { return func(c *config) { c.pool.MaxConns = n } }

// WithStatementTimeout sets statement_timeout on every connection Open creates (default: none).
// A statement that runs out of time fails with an error wrapping stead.ErrTimeout. Ignored by New:
// set it on the application's pool instead.
func WithStatementTimeout(d time.Duration) Option {
	return func(c *config) { c.pool.StatementTimeout = d }
}

// WithAcquireTimeout bounds how long a call waits for a free pooled connection (default: as long
// as its context allows). A call that gives up fails with an error wrapping stead.ErrUnavailable:
// nothing was sent, so retrying is safe.
func WithAcquireTimeout(d time.Duration) Option { return func(c *config) { c.acquireTimeout = d } }

// WithTraceCap sets how many trace steps each execution keeps (default DefaultTraceCap); older
// steps are deleted by the commit that appends a new one. 0 keeps every step.
func WithTraceCap(n int) Option { return func(c *config) { c.traceCap = max(n, 0) } }

// WithConnectRetry sets how many times Open tries its first connection and the pause between
// tries (default 15 attempts, 1 s apart), so a worker started beside its database waits for it.
func WithConnectRetry(attempts int, delay time.Duration) Option {
	return func(c *config) {
		c.pool.ConnectAttempts = attempts
		c.pool.ConnectDelay = delay
	}
}

// WithPgBouncer makes the pool Open creates send every statement unnamed, which PgBouncer in
// transaction pooling mode requires. The store keeps no session state, so nothing else changes;
// each call costs the same number of round-trips. PgBouncer refuses startup parameters it does not
// know unless told to ignore them (ignore_startup_parameters), so with WithStatementTimeout either
// list statement_timeout there or set it on the database role instead. Ignored by New: configure
// the application's pool with pgx.QueryExecModeExec instead.
func WithPgBouncer() Option { return func(c *config) { c.pool.PgBouncer = true } }

// WithoutMigrate makes Open skip the migration, for deployments that run it separately
// (Store.Migrate, or the stead CLI). Open then checks that the schema is at the version this
// package needs (Store.CheckSchema) and fails otherwise.
func WithoutMigrate() Option { return func(c *config) { c.migrate = false } }
