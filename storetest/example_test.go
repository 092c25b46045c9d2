package storetest_test

import (
	"testing"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/storetest"
)

// A backend runs the suite from one of its own tests. The factory hands each subtest a fresh,
// empty store with the trace cap it asks for, and registers the store's cleanup.
func ExampleRun() {
	TestConformance := func(t *testing.T) {
		storetest.Run(t, func(t *testing.T, cfg storetest.Config) *stead.Store {
			var opts []memstore.Option
			if cfg.TraceCap > 0 {
				opts = append(opts, memstore.WithTraceCap(cfg.TraceCap))
			}
			s := memstore.New(opts...)
			t.Cleanup(func() { _ = s.Close() })
			return s
		})
	}
	_ = TestConformance
}
