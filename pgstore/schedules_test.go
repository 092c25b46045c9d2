package pgstore_test

import (
	"testing"

	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/schedule"
	"github.com/steadhq/stead/schedule/schedtest"
)

func TestScheduleConformance(t *testing.T) {
	t.Parallel()
	schedtest.Run(t, func(t *testing.T) schedule.Backend {
		s, err := schedule.For(newStoreOn(t, pgdbtest.Pool(t)))
		if err != nil {
			t.Fatal(err)
		}
		return s.Backend()
	})
}
