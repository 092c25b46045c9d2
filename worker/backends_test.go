package worker_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/transport/sqlitetransport"
	"github.com/steadhq/stead/worker"
	"github.com/steadhq/stead/worker/pgtx"
	"github.com/steadhq/stead/worker/sqlitetx"
)

// testBackend is a store and a transport on one database, as a deployment opens them: one
// sqlitedb.DB or one pool, shared.
type testBackend struct {
	Store     *stead.Store
	Transport *transport.Transport
	db        *sqlitedb.DB // SQLite's, nil on PostgreSQL
	closers   []func() error
}

// openBackend opens spec (a SQLite file or a PostgreSQL URL, with schema) the way the stead
// command does.
func openBackend(ctx context.Context, spec, schema string) (*testBackend, error) {
	b := &testBackend{}
	err := b.open(ctx, spec, schema)
	if err != nil {
		return nil, errors.Join(err, b.Close())
	}
	return b, nil
}

func (b *testBackend) open(ctx context.Context, spec, schema string) error {
	if strings.HasPrefix(spec, "postgres://") {
		// Through the test run's PgBouncer the pool sends no named statements and the
		// listener connects to the server itself, as a deployment behind PgBouncer does.
		bouncer := spec == os.Getenv("STEAD_TEST_PGBOUNCER_URL")
		pool, err := pgdb.Open(ctx, spec, pgdb.Config{MaxConns: 16, PgBouncer: bouncer})
		if err != nil {
			return err
		}
		b.closers = append(b.closers, func() error { pool.Close(); return nil })
		if b.Store, err = pgstore.New(ctx, pool, pgstore.WithSchema(schema)); err != nil {
			return err
		}
		b.closers = append(b.closers, b.Store.Close)
		topts := []pgtransport.Option{pgtransport.WithSchema(schema)}
		if bouncer {
			topts = append(topts, pgtransport.WithListenURL(pgdbtest.URL()))
		}
		b.Transport, err = pgtransport.New(ctx, pool, topts...)
		if err == nil {
			b.closers = append(b.closers, b.Transport.Close)
		}
		return err
	}
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: spec})
	if err != nil {
		return err
	}
	b.closers = append(b.closers, db.Close)
	b.db = db
	if b.Store, err = sqlitestore.New(ctx, db); err != nil {
		return err
	}
	b.closers = append(b.closers, b.Store.Close)
	b.Transport, err = sqlitetransport.New(ctx, db)
	if err == nil {
		b.closers = append(b.closers, b.Transport.Close)
	}
	return err
}

// Close closes the transport and the store, then the handle they share.
func (b *testBackend) Close() error {
	var errs []error
	for i := len(b.closers) - 1; i >= 0; i-- {
		errs = append(errs, b.closers[i]())
	}
	b.closers = nil
	return errors.Join(errs...)
}

// shared returns the backend's shared database for the shared-transaction mode, or nil when on
// is false or the backend is SQLite, whose one-transaction mode is finisher's.
func (b *testBackend) shared(t testing.TB, on bool) worker.SharedDB {
	t.Helper()
	if !on || b.db != nil {
		return nil
	}
	db, err := pgtx.New(b.Store, b.Transport)
	if err != nil {
		t.Fatalf("pgtx.New: %v", err)
	}
	return db
}

// finisher returns the backend's finisher for SQLite's one-transaction mode (the round's commit,
// publish and acks in one transaction), or nil when on is false or the backend is PostgreSQL,
// whose one-transaction mode is shared's.
func (b *testBackend) finisher(t testing.TB, on bool) worker.Finisher {
	t.Helper()
	if !on || b.db == nil {
		return nil
	}
	f, err := sqlitetx.New(b.db, b.Store, b.Transport)
	if err != nil {
		t.Fatalf("sqlitetx.New: %v", err)
	}
	return f
}
