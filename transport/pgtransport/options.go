package pgtransport

import (
	"log/slog"
	"time"
)

// DefaultPollInterval is how often an idle Wait re-checks without a notification.
const DefaultPollInterval = 500 * time.Millisecond

// The listener's liveness check: a silent LISTEN connection is pinged after listenCheck, and
// given listenPing to answer. Between them they bound how long a listener stays on a server that
// went silent; they cost one round trip every few seconds only while no notification comes.
const (
	listenCheck = 3 * time.Second
	listenPing  = 2 * time.Second
)

// An Option configures New.
type Option func(*config)

type config struct {
	schema  string
	migrate bool
	now     func() time.Time
	poll    time.Duration
	listen  bool
	notify  bool
	// listenURL, when set, is where the listener connects instead of the pool's server.
	listenURL string
	log       *slog.Logger
	// listenCheck is the silence after which the listener pings its server, listenPing how
	// long that ping may take.
	listenCheck, listenPing time.Duration
}

func newConfig(opts []Option) config {
	c := config{migrate: true, now: time.Now, poll: DefaultPollInterval, listen: true, notify: true,
		log: slog.New(slog.DiscardHandler), listenCheck: listenCheck, listenPing: listenPing}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithSchema keeps every table and function of the transport in the named schema, created by the
// migration if missing. The name must be a plain identifier (letters, digits, underscores); any
// other name makes New fail with an error wrapping stead.ErrInvalid. Without it the connection's
// search_path decides (usually public).
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

// WithListenURL makes the listener connect to url instead of the pool's server. Behind PgBouncer
// in transaction mode, where LISTEN needs a session PgBouncer does not keep, give it the
// PostgreSQL server's own address (the one PgBouncer points at): the listener holds one session
// there and every other statement goes through PgBouncer. A url that does not parse makes New
// fail with an error wrapping stead.ErrInvalid. Without it, a transport on a pool opened in
// PgBouncer mode (pgdb.Config.PgBouncer) does not listen, logs a warning saying so, and Wait
// polls. The listener's connection gets what pgdb.Open gives a pool's (pgdb.ParseConnConfig with
// the defaults): a connect timeout per host, keepalives, and for a url naming several hosts
// (a primary and its standbys) the one that takes writes.
func WithListenURL(url string) Option { return func(c *config) { c.listenURL = url } }

// WithLogger sets where the transport writes its warnings (default: discard): a listener that
// cannot run, or lost its connection.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

// WithoutNotify stops this transport's publishes and nacks from sending notifications (waiters
// of this process are still woken directly). PostgreSQL serialises the commits of all
// transactions that notified on one database-wide lock; a fleet that never idles can trade the
// wake-up latency of waiters in other processes (then the poll interval) for that.
func WithoutNotify() Option { return func(c *config) { c.notify = false } }

// WithoutMigrate makes New skip the migration, for deployments that run it separately (a New
// without it, or the stead CLI). New then checks that the schema is at the version this package expects and
// fails otherwise.
func WithoutMigrate() Option { return func(c *config) { c.migrate = false } }
