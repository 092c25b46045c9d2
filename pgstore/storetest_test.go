package pgstore_test

import (
	"testing"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/storetest"
)

// factory gives every subtest a store on its own fresh schema, dropped when the subtest ends.
func factory(opts ...pgstore.Option) storetest.Factory {
	return func(t *testing.T, cfg storetest.Config) stead.Store {
		o := append([]pgstore.Option{}, opts...)
		if cfg.TraceCap > 0 {
			o = append(o, pgstore.WithTraceCap(cfg.TraceCap))
		}
		return newStore(t, o...)
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, factory())
}

// TestConformancePgBouncer runs the suite with unnamed statements, as behind PgBouncer in
// transaction mode.
func TestConformancePgBouncer(t *testing.T) {
	t.Parallel()
	storetest.Run(t, factory(pgstore.WithPgBouncer()))
}
