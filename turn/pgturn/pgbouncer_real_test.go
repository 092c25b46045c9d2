package pgturn_test

import (
	"context"
	"testing"

	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/turntest"
)

// TestConformanceThroughPgBouncer runs the whole contract through a real PgBouncer in
// transaction mode (test.sh starts one), with the pool in PgBouncer mode. The schemas are made
// and dropped on the direct server.
func TestConformanceThroughPgBouncer(t *testing.T) {
	t.Parallel()
	url := pgdbtest.BouncerURL(t)
	turntest.Run(t, func(ctx context.Context) (turn.Stores, error) {
		pool := openPool(t, url, pgdb.Config{PgBouncer: true, MaxConns: 2, ConnectAttempts: 1})
		return newStoreOn(t, pool, pgdbtest.Schema(t)).Stores, nil
	}, turntest.Parallel())
}
