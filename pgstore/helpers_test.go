package pgstore_test

import (
	"context"
	"testing"

	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/pgstore"
)

// newStore opens a store on a fresh schema that is dropped when the test ends.
func newStore(t testing.TB, opts ...pgstore.Option) *pgstore.Store {
	t.Helper()
	pool := pgdbtest.Pool(t)
	name := pgdbtest.NewName(t)
	t.Cleanup(func() { pgdbtest.Drop(t, pool, name) })
	s, err := pgstore.Open(context.Background(), pgdbtest.URL(), append([]pgstore.Option{pgstore.WithSchema(name)}, opts...)...)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func pgstoreTraceCap(n int) pgstore.Option { return pgstore.WithTraceCap(n) }
