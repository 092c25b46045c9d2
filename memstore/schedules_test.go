package memstore_test

import (
	"testing"

	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/schedule"
	"github.com/steadhq/stead/schedule/schedtest"
)

func TestScheduleConformance(t *testing.T) {
	schedtest.Run(t, func(t *testing.T) schedule.Backend {
		s, err := schedule.For(memstore.New())
		if err != nil {
			t.Fatal(err)
		}
		return s.Backend()
	})
}
