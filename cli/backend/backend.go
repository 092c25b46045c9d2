package backend

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/transport/sqlitetransport"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/pgturn"
	"github.com/steadhq/stead/turn/sqliteturn"
	"github.com/steadhq/stead/worker"
	"github.com/steadhq/stead/worker/pgtx"
	"github.com/steadhq/stead/worker/sqlitetx"
)

// Backend is a store and a transport on one database, the pool or file handle they share, and
// the turn stores on that handle once a command asks for them (Turns).
type Backend struct {
	// Kind is "sqlite" or "postgres".
	Kind string
	// Where is the file, or the URL without its password.
	Where     string
	Store     *stead.Store
	Transport *transport.Transport
	// Pool is the PostgreSQL pool (nil on SQLite); DB the SQLite handle (nil on PostgreSQL).
	Pool *pgxpool.Pool
	DB   *sqlitedb.DB

	closers []func() error // what Open and Turns opened, in opening order

	schema  string // Options.Schema, for the turn stores Turns opens later
	turnsMu sync.Mutex
	turns   *turn.Stores
}

// Close closes what Open and Turns opened, the components before the pool or file they share.
// It is safe on a Backend that Open left half open.
func (b *Backend) Close() error {
	var errs []error
	for i := len(b.closers) - 1; i >= 0; i-- {
		errs = append(errs, b.closers[i]())
	}
	b.closers = nil
	return errors.Join(errs...)
}

// IsPostgres reports whether spec is a PostgreSQL URL.
func IsPostgres(spec string) bool {
	return strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://")
}

// Options tune Open.
type Options struct {
	// Schema keeps stead's PostgreSQL tables in that schema (PostgreSQL only).
	Schema string
	// MaxConns bounds the PostgreSQL pool the store and the transport share (default
	// DefaultMaxConns).
	MaxConns int32
	// NoNotify stops the PostgreSQL transport's notifications (see pgtransport.WithoutNotify):
	// PostgreSQL serialises the commits of notifying transactions on one lock, which caps a
	// busy fleet; idle waiters then wake by polling.
	NoNotify bool
	// PgBouncer opens the pool in PgBouncer mode (pgdb.Config.PgBouncer: no named statements), for
	// a URL that goes through PgBouncer in transaction mode (PostgreSQL only).
	PgBouncer bool
	// ListenURL is a direct connection to the PostgreSQL server for the transport's listener
	// (pgtransport.WithListenURL), which LISTEN through PgBouncer needs (PostgreSQL only).
	ListenURL string
	// TurnsOnly opens the database alone, without the execution store and the transport (Store
	// and Transport stay nil), for commands that only touch turns: they must not create the
	// tables of components a database may not use. Turns opens the turn stores.
	TurnsOnly bool
	// ConnectAttempts and ConnectDelay are pgdb.Config's: how often, and how far apart, the
	// first PostgreSQL connection is tried (defaults: pgdb's).
	ConnectAttempts int
	ConnectDelay    time.Duration
}

// DefaultMaxConns is the pool size when Options leaves it at zero: enough for a worker's claim
// loops, its relays and a client at once.
const DefaultMaxConns = 16

// Open opens the store and the transport named by spec, creating or migrating their schema.
func Open(ctx context.Context, spec string, o Options) (*Backend, error) {
	if spec == "" {
		return nil, fmt.Errorf("%w: no store given: want a SQLite file path or a postgres:// URL", stead.ErrInvalid)
	}
	b := &Backend{schema: o.Schema}
	if err := b.open(ctx, spec, o); err != nil {
		return nil, errors.Join(err, b.Close())
	}
	return b, nil
}

func (b *Backend) open(ctx context.Context, spec string, o Options) error {
	var err error
	if IsPostgres(spec) {
		b.Kind, b.Where = "postgres", Redact(spec)
		if o.MaxConns == 0 {
			o.MaxConns = DefaultMaxConns
		}
		if b.Pool, err = pgdb.Open(ctx, spec, pgdb.Config{MaxConns: o.MaxConns, PgBouncer: o.PgBouncer,
			ConnectAttempts: o.ConnectAttempts, ConnectDelay: o.ConnectDelay}); err != nil {
			return connectHint(spec, err)
		}
		b.closers = append(b.closers, func() error { b.Pool.Close(); return nil })
		if o.TurnsOnly {
			return nil
		}
		var sopts []pgstore.Option
		var topts []pgtransport.Option
		if o.Schema != "" {
			sopts = append(sopts, pgstore.WithSchema(o.Schema))
			topts = append(topts, pgtransport.WithSchema(o.Schema))
		}
		if o.NoNotify {
			topts = append(topts, pgtransport.WithoutNotify())
		}
		if o.ListenURL != "" {
			topts = append(topts, pgtransport.WithListenURL(o.ListenURL))
		}
		if b.Store, err = pgstore.New(ctx, b.Pool, sopts...); err != nil {
			return err
		}
		b.closers = append(b.closers, b.Store.Close)
		if b.Transport, err = pgtransport.New(ctx, b.Pool, topts...); err != nil {
			return err
		}
		b.closers = append(b.closers, b.Transport.Close)
		return nil
	}
	if o.Schema != "" || o.PgBouncer || o.ListenURL != "" {
		return fmt.Errorf("%w: a schema, PgBouncer mode and a listen URL apply to PostgreSQL only", stead.ErrInvalid)
	}
	b.Kind, b.Where = "sqlite", spec
	if b.DB, err = sqlitedb.Open(ctx, sqlitedb.Config{Path: spec}); err != nil {
		return err
	}
	b.closers = append(b.closers, b.DB.Close)
	if o.TurnsOnly {
		return nil
	}
	if b.Store, err = sqlitestore.New(ctx, b.DB); err != nil {
		return err
	}
	b.closers = append(b.closers, b.Store.Close)
	if b.Transport, err = sqlitetransport.New(ctx, b.DB); err != nil {
		return err
	}
	b.closers = append(b.closers, b.Transport.Close)
	return nil
}

// Turns returns the turn stores on the same pool or file, opening them (and creating or migrating
// their schema) on the first call only: a command that never asks for them never pays for them.
// Close closes them with the rest.
func (b *Backend) Turns(ctx context.Context) (turn.Stores, error) {
	b.turnsMu.Lock()
	defer b.turnsMu.Unlock()
	if b.turns != nil {
		return *b.turns, nil
	}
	var s turn.Stores
	var err error
	if b.Kind == "postgres" {
		var opts []pgturn.Option
		if b.schema != "" {
			opts = append(opts, pgturn.WithSchema(b.schema))
		}
		s, err = pgturn.New(ctx, b.Pool, opts...)
	} else {
		s, err = sqliteturn.New(ctx, b.DB)
	}
	if err != nil {
		return turn.Stores{}, err
	}
	b.turns = &s
	b.closers = append(b.closers, s.Close)
	return s, nil
}

// SharedTx returns the shared database of the store and the transport for a worker's
// shared-transaction mode (PostgreSQL only), or nil when on is false.
func (b *Backend) SharedTx(on bool) (worker.SharedDB, error) {
	if !on {
		return nil, nil
	}
	if b.Kind != "postgres" {
		return nil, fmt.Errorf("%w: the shared transaction needs PostgreSQL, not %s", stead.ErrInvalid, b.Kind)
	}
	return pgtx.New(b.Store, b.Transport)
}

// Finisher returns the finisher of the store and the transport for a worker's one-transaction
// mode on SQLite (sqlitetx: each round's commit, publish and acks in one transaction), or nil
// when on is false or the backend is PostgreSQL, whose one-transaction mode is SharedTx.
func (b *Backend) Finisher(on bool) (worker.Finisher, error) {
	if !on || b.Kind != "sqlite" {
		return nil, nil
	}
	f, err := sqlitetx.New(b.DB, b.Store, b.Transport)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Client returns a client of the store and the transport that knows the machines of known
// (nil: none). On PostgreSQL its Sender is the shared database of the two (pgtx), so that Send
// checks the execution and takes its priority in the publish's statement, and Create commits
// the executions and queues their starts in one transaction.
func (b *Backend) Client(known worker.Machines) (*worker.Client, error) {
	c := &worker.Client{Store: b.Store, Transport: b.Transport, Known: known}
	if b.Kind == "postgres" {
		shared, err := pgtx.New(b.Store, b.Transport)
		if err != nil {
			return nil, err
		}
		c.Sender = shared
	}
	return c, nil
}

// Redact hides the password of a PostgreSQL URL for logs and summaries.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// connectHint adds what to do to the errors a first connection most often meets: nothing
// listening (a server not installed, not started, or still starting) and a database that was
// never created.
func connectHint(spec string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "SQLSTATE 3D000"):
		db := "the database"
		if u, perr := url.Parse(spec); perr == nil && strings.Trim(u.Path, "/") != "" {
			db = fmt.Sprintf("database %q", strings.Trim(u.Path, "/"))
		}
		return fmt.Errorf("%w (%s does not exist on that server: create it with createdb, or name another in the URL)", err, db)
	case strings.Contains(msg, "connection refused"), strings.Contains(msg, "no such file or directory"):
		return fmt.Errorf("%w (is PostgreSQL installed and running there? Start it (Debian: pg_ctlcluster <version> main start), "+
			"give --wait-for-db 30s to wait for a server that is starting, or use SQLite, which needs no server: --store app.db --create)", err)
	}
	return err
}
