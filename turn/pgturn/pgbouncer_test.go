package pgturn_test

import (
	"context"
	"testing"

	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/turntest"
)

// With pgdb.Config.PgBouncer every statement goes as an unnamed statement with parameter types
// taken from the Go values, as PgBouncer's transaction pooling requires: the whole contract must
// hold in that mode too.
func TestConformancePgBouncerMode(t *testing.T) {
	t.Parallel()
	pgdbtest.Pool(t) // skips when the server is unreachable
	turntest.Run(t, func(ctx context.Context) (turn.Stores, error) {
		pool := openPool(t, pgdbtest.URL(), pgdb.Config{PgBouncer: true, MaxConns: 2})
		return newStoreOn(t, pool, pgdbtest.Schema(t)).Stores, nil
	}, turntest.Parallel())
}
