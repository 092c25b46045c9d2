package pgstore_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/storetest"
)

// factory gives every subtest a store on its own fresh schema of pool, dropped when the subtest
// ends.
func factory(pool func(t *testing.T) *pgxpool.Pool) storetest.Factory {
	return func(t *testing.T, cfg storetest.Config) *stead.Store {
		var opts []pgstore.Option
		if cfg.TraceCap > 0 {
			opts = append(opts, pgstore.WithTraceCap(cfg.TraceCap))
		}
		return newStoreOn(t, pool(t), opts...)
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, factory(func(t *testing.T) *pgxpool.Pool { return pgdbtest.Pool(t) }))
}

// TestConformancePgBouncer runs the suite with unnamed statements, as behind PgBouncer in
// transaction mode.
func TestConformancePgBouncer(t *testing.T) {
	t.Parallel()
	pool := openPool(t, pgdb.Config{PgBouncer: true})
	storetest.Run(t, factory(func(*testing.T) *pgxpool.Pool { return pool }))
}
