package sqlitestore_test

import (
	"path/filepath"
	"testing"

	"github.com/steadhq/stead/schedule"
	"github.com/steadhq/stead/schedule/schedtest"
	"github.com/steadhq/stead/sqlitedb"
)

func TestScheduleConformance(t *testing.T) {
	schedtest.Run(t, func(t *testing.T) schedule.Backend {
		st := newStore(t, openDB(t, sqlitedb.Config{Path: filepath.Join(t.TempDir(), "stead.db")}))
		s, err := schedule.For(st)
		if err != nil {
			t.Fatal(err)
		}
		return s.Backend()
	})
}
