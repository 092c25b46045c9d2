package pgturn_test

import (
	"context"
	"testing"

	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/pgturn"
	"github.com/steadhq/stead/turn/turntest"
)

// With Config.PgBouncer every statement goes as an unnamed statement with parameter types taken
// from the Go values, as PgBouncer's transaction pooling requires: the whole contract must hold
// in that mode too.
func TestConformancePgBouncerMode(t *testing.T) {
	t.Parallel()
	pgdbtest.Pool(t) // skips when the server is unreachable
	turntest.Run(t, func(ctx context.Context) (turn.Stores, error) {
		schema := pgdbtest.Schema(t)
		s, err := pgturn.ConnectWith(ctx, pgdbtest.URL(), pgturn.Config{Schema: schema, PgBouncer: true, MaxConns: 2, MinIdleConns: -1})
		if err != nil {
			return turn.Stores{}, err
		}
		t.Cleanup(func() { _ = s.Close() })
		if err := s.Migrate(ctx); err != nil {
			return turn.Stores{}, err
		}
		return s.Stores(), nil
	}, turntest.Parallel())
}
