package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/pgstore"
)

// newStore returns a store on a fresh schema, dropped when the test ends, on a pool of its own.
func newStore(t testing.TB, opts ...pgstore.Option) *stead.Store {
	t.Helper()
	return newStoreOn(t, pgdbtest.Pool(t), opts...)
}

// newStoreOn returns a store on a fresh schema of pool, dropped when the test ends.
func newStoreOn(t testing.TB, pool *pgxpool.Pool, opts ...pgstore.Option) *stead.Store {
	t.Helper()
	s, err := newStoreOnErr(t, pool, pool, opts...)
	if err != nil {
		t.Fatalf("new store: %v", err)
	}
	return s
}

// newStoreOnErr is newStoreOn returning New's error; the schema is dropped through dropper.
func newStoreOnErr(t testing.TB, pool, dropper *pgxpool.Pool, opts ...pgstore.Option) (*stead.Store, error) {
	t.Helper()
	name := pgdbtest.NewName(t)
	t.Cleanup(func() { pgdbtest.Drop(t, dropper, name) })
	s, err := pgstore.New(context.Background(), pool, append([]pgstore.Option{pgstore.WithSchema(name)}, opts...)...)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, nil
}

// openPool returns a pool on the test server with the settings of cfg, closed when the test
// ends (the test is skipped when there is no server).
func openPool(t testing.TB, cfg pgdb.Config) *pgxpool.Pool {
	t.Helper()
	pgdbtest.Pool(t) // skips (or fails, in CI) when the server is unreachable
	cfg.ConnectAttempts = 1
	pool, err := pgdb.Open(context.Background(), pgdbtest.URL(), cfg)
	if err != nil {
		t.Fatalf("open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// backend returns the PostgreSQL backend of s.
func backend(t testing.TB, s *stead.Store) *pgstore.Backend {
	t.Helper()
	b, ok := s.Backend().(*pgstore.Backend)
	if !ok {
		t.Fatalf("backend is %T, want *pgstore.Backend", s.Backend())
	}
	return b
}
