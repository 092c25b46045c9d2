package mapstore_test

import (
	"testing"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/examples/mapstore"
	"github.com/steadhq/stead/storetest"
)

// TestConformance is all a backend needs to prove itself: the suite gets a fresh store per
// subtest through the public API.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, cfg storetest.Config) *stead.Store {
		s := mapstore.New(cfg.TraceCap)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
