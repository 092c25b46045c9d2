package backend

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/transport/sqlitetransport"
)

// Backend is a store and a transport on one database.
type Backend struct {
	// Kind is "sqlite" or "postgres".
	Kind string
	// Where is the file, or the URL without its password.
	Where     string
	Store     stead.Store
	Transport *transport.Transport
	// closeLast closes what the transport runs on (its SQLite DB or PostgreSQL pool), after it.
	closeLast func() error
}

// Close closes the transport, the store, then what the transport ran on.
func (b *Backend) Close() error {
	var errs []error
	if b.Transport != nil {
		errs = append(errs, b.Transport.Close())
	}
	if b.Store != nil {
		errs = append(errs, b.Store.Close())
	}
	if b.closeLast != nil {
		errs = append(errs, b.closeLast())
	}
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
	// MaxConns bounds each PostgreSQL pool (0: the driver's default).
	MaxConns int32
	// NoNotify stops the PostgreSQL transport's notifications (see pgtransport.WithoutNotify):
	// PostgreSQL serialises the commits of notifying transactions on one lock, which caps a
	// busy fleet; idle waiters then wake by polling.
	NoNotify bool
	// Ungated leaves the SQLite store's and transport's writes unserialized (see gate); for
	// measuring what the gate buys.
	Ungated bool
}

// Open opens the store and the transport named by spec, creating or migrating their schema.
func Open(ctx context.Context, spec string, o Options) (*Backend, error) {
	if spec == "" {
		return nil, check.Invalidf("no store given: want a SQLite file path or a postgres:// URL")
	}
	b := &Backend{}
	var err error
	if IsPostgres(spec) {
		b.Kind, b.Where = "postgres", Redact(spec)
		var sopts []pgstore.Option
		var topts []pgtransport.Option
		if o.Schema != "" {
			sopts = append(sopts, pgstore.WithSchema(o.Schema))
			topts = append(topts, pgtransport.WithSchema(o.Schema))
		}
		if o.NoNotify {
			topts = append(topts, pgtransport.WithoutNotify())
		}
		if o.MaxConns > 0 {
			sopts = append(sopts, pgstore.WithMaxConns(o.MaxConns))
		}
		if b.Store, err = pgstore.Open(ctx, spec, sopts...); err != nil {
			return nil, err
		}
		// The transport has a pool of its own, of the store's size, as it always had: the
		// connection budgets the commands compute count on two.
		pool, err := pgdb.Open(ctx, spec, pgdb.Config{MaxConns: o.MaxConns})
		if err != nil {
			b.Close()
			return nil, err
		}
		b.closeLast = func() error { pool.Close(); return nil }
		if b.Transport, err = pgtransport.New(ctx, pool, topts...); err != nil {
			b.Close()
			return nil, err
		}
		return b, nil
	}
	if o.Schema != "" {
		return nil, check.Invalidf("a schema applies to PostgreSQL only")
	}
	b.Kind, b.Where = "sqlite", spec
	st, err := sqlitestore.Open(ctx, spec)
	if err != nil {
		return nil, err
	}
	b.Store = st
	// The store opens the file itself for now, so the transport has a DB of its own on it; the
	// gate makes the two queue their writes (see gate).
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: spec})
	if err != nil {
		b.Close()
		return nil, err
	}
	b.closeLast = db.Close
	tr, err := sqlitetransport.New(ctx, db)
	if err != nil {
		b.Close()
		return nil, err
	}
	b.Transport = tr
	if !o.Ungated {
		g := &gate{}
		b.Store = gatedStore{Store: st, g: g}
		// The gated transport owns tr's backend from now on: closing it closes the backend.
		b.Transport = transport.New(gatedBackend{Backend: tr.Backend(), g: g})
	}
	return b, nil
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
