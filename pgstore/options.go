package pgstore

// DefaultTraceCap is how many trace steps each execution keeps unless WithTraceCap says otherwise.
const DefaultTraceCap = 200

// An Option configures New.
type Option func(*config)

type config struct {
	schema   string
	traceCap int
	migrate  bool
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
// other name makes New fail with an error wrapping stead.ErrInvalid. Without it the
// connection's search_path decides (usually public).
func WithSchema(name string) Option { return func(c *config) { c.schema = name } }

// WithTraceCap sets how many trace steps each execution keeps (default DefaultTraceCap); older
// steps are deleted by the commit that appends a new one. 0 or less keeps every step.
func WithTraceCap(n int) Option { return func(c *config) { c.traceCap = max(n, 0) } }

// WithoutMigrate makes New leave the schema alone, for deployments that migrate separately (a
// New without it, or the stead CLI). New then checks that the schema is at exactly the migration
// version this package has, and fails otherwise.
func WithoutMigrate() Option { return func(c *config) { c.migrate = false } }
