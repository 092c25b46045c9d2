package pgturn_test

import (
	"context"
	"testing"

	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/pgturn"
	"github.com/steadhq/stead/turn/turntest"
)

// newStore returns a store on a fresh, migrated schema of its own, dropped when t ends.
func newStore(t testing.TB, opts ...pgturn.Option) *pgturn.Store {
	t.Helper()
	pool := pgdbtest.Pool(t)
	schema := pgdbtest.Schema(t)
	s, err := pgturn.FromPool(pool, append([]pgturn.Option{pgturn.WithSchema(schema)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

// The whole contract, each check on an empty schema of its own.
func TestConformance(t *testing.T) {
	t.Parallel()
	turntest.Run(t, func(ctx context.Context) (turn.Stores, error) {
		return newStore(t).Stores(), nil
	}, turntest.Parallel())
}

// The suite's extra checks: bad input, racing admissions, and the stream paged while writers
// append concurrently (including two writers on one account, where a later sequence could
// otherwise commit first and be passed over).
func TestConformanceExtra(t *testing.T) {
	t.Parallel()
	turntest.RunExtra(t, func(ctx context.Context) (turn.Stores, error) {
		return newStore(t).Stores(), nil
	}, turntest.Parallel())
}
