package pgtransport_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/transport/transporttest"
)

// newPool opens a pool on the test server with c's settings, closed when the test ends: one
// pool per transport stands for one process (or host) per transport.
func newPool(t testing.TB, c pgdb.Config) *pgxpool.Pool {
	t.Helper()
	pgdbtest.Pool(t) // skip (or fail under STEAD_REQUIRE_POSTGRES) without a server
	c.ConnectAttempts = 1
	pool, err := pgdb.Open(context.Background(), pgdbtest.URL(), c)
	if err != nil {
		t.Fatalf("pgdb.Open: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// openOn returns a transport on pool and schema; the caller closes it.
func openOn(t testing.TB, pool *pgxpool.Pool, schema string, opts ...pgtransport.Option) *transport.Transport {
	t.Helper()
	tr, err := pgtransport.New(context.Background(), pool, append([]pgtransport.Option{pgtransport.WithSchema(schema)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tr
}

// open returns a transport on schema with a pool of its own; the caller closes it.
func open(t testing.TB, schema string, opts ...pgtransport.Option) *transport.Transport {
	t.Helper()
	return openOn(t, newPool(t, pgdb.Config{MaxConns: 4}), schema, opts...)
}

// backendOf returns the PostgreSQL backend behind tr, for the methods that run in a transaction.
func backendOf(tr *transport.Transport) *pgtransport.Backend {
	return tr.Backend().(*pgtransport.Backend)
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	pool := pgdbtest.Pool(t)
	ctx := context.Background()
	tests := []struct {
		name string
		pool *pgxpool.Pool
		opts []pgtransport.Option
		want error
	}{
		{"nil pool", nil, nil, stead.ErrInvalid},
		{"unsafe schema", pool, []pgtransport.Option{pgtransport.WithSchema(`x"; DROP TABLE y; --`)}, stead.ErrInvalid},
		{"reserved schema", pool, []pgtransport.Option{pgtransport.WithSchema("pg_catalog")}, stead.ErrInvalid},
		{"nil clock", pool, []pgtransport.Option{pgtransport.WithClock(nil)}, stead.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := pgtransport.New(ctx, tc.pool, tc.opts...)
			if err == nil {
				tr.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("New = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestWithoutMigrate(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.Schema(t)
	pool := pgdbtest.Pool(t)
	ctx := context.Background()
	if tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema(schema), pgtransport.WithoutMigrate()); err == nil {
		tr.Close()
		t.Fatal("New without migrate on an empty schema succeeded")
	}
	tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema(schema)) // migrates
	if err != nil {
		t.Fatal(err)
	}
	tr.Close()
	tr, err = pgtransport.New(ctx, pool, pgtransport.WithSchema(schema), pgtransport.WithoutMigrate())
	if err != nil {
		t.Fatalf("New without migrate on a migrated schema: %v", err)
	}
	tr.Close()
}

// TestConcurrentMigrations starts many transports on one new schema at once, each on a pool of
// its own as processes would: the advisory lock lets one migrate and the others find nothing to
// do.
func TestConcurrentMigrations(t *testing.T) {
	t.Parallel()
	pool := pgdbtest.Pool(t)
	schema := pgdbtest.NewName(t)
	t.Cleanup(func() { pgdbtest.Drop(t, pool, schema) })
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		p := newPool(t, pgdb.Config{MaxConns: 2})
		wg.Go(func() {
			tr, err := pgtransport.New(context.Background(), p, pgtransport.WithSchema(schema))
			if err == nil {
				err = tr.Publish(context.Background(), "G", transporttest.Event("e"), 0)
				tr.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestCloseLeavesPoolOpen checks that the transport runs on the application's pool and leaves it
// open when it closes, and that the backend refuses its own calls from then on.
func TestCloseLeavesPoolOpen(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.Schema(t)
	pool := pgdbtest.Pool(t)
	ctx := context.Background()
	tr := openOn(t, pool, schema)
	b := backendOf(tr)
	if b.Pool() != pool || b.Schema() != schema {
		t.Fatal("Pool or Schema do not report what New was given")
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("the application's pool was closed by Close: %v", err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the test only reads errors
	if _, err := b.ClaimHeldGroupsTx(ctx, tx, "w", transporttest.Visibility, 0, 1, 1, nil); !errors.Is(err, stead.ErrClosed) {
		t.Fatalf("ClaimHeldGroupsTx after Close = %v, want ErrClosed", err)
	}
}
