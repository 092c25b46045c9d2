package schedule_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/schedule"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
)

const declaring = `
id: sweep
initial: idle
states:
  idle: {on: {go: done}}
  done: {final: success}
schedules:
  every-five: {every: 5m, overlap: skip, context: {region: eu}}
  mornings: {cron: "0 9 * * MON-FRI", zone: Europe/Paris, catch_up: none, window: 1h}
`

func declaredStores(t *testing.T) map[string]*schedule.Store {
	t.Helper()
	mem, err := schedule.For(memstore.New())
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlitedb.Open(context.Background(), sqlitedb.Config{Path: filepath.Join(t.TempDir(), "s.db")})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlitestore.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(); _ = db.Close() })
	lite, err := schedule.For(st)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*schedule.Store{"memory": mem, "sqlite": lite}
}

// TestApplyDeclared: a definition's declared schedules are created once, re-applying changes
// nothing, a changed declaration updates only what it declares (a pause set at runtime stays),
// and a bad declaration writes nothing.
func TestApplyDeclared(t *testing.T) {
	for name, store := range declaredStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			def, err := chart.Parse("sweep", []byte(declaring))
			if err != nil {
				t.Fatal(err)
			}
			decl := schedule.Declared(def)
			if len(decl) != 2 || decl[0].ID != "every-five" || decl[0].Every != 5*time.Minute || decl[0].DefinitionID != "sweep" {
				t.Fatalf("Declared = %+v", decl)
			}
			got, err := store.Apply(ctx, decl)
			if err != nil || got != (schedule.Applied{Created: 2}) {
				t.Fatalf("first Apply = %+v, %v", got, err)
			}
			if got, err = store.Apply(ctx, decl); err != nil || got != (schedule.Applied{Unchanged: 2}) {
				t.Fatalf("second Apply = %+v, %v", got, err)
			}
			if _, err := store.Pause(ctx, "every-five"); err != nil {
				t.Fatal(err)
			}
			decl[0].Every = 10 * time.Minute
			if got, err = store.Apply(ctx, decl); err != nil || got != (schedule.Applied{Updated: 1, Unchanged: 1}) {
				t.Fatalf("Apply after a change = %+v, %v", got, err)
			}
			sc, err := store.Get(ctx, "every-five")
			if err != nil || sc.Every != 10*time.Minute || !sc.Paused || string(sc.Context) != `{"region":"eu"}` {
				t.Fatalf("every-five after Apply = %+v, %v", sc, err)
			}
			m, err := store.Get(ctx, "mornings")
			if err != nil || m.TimeZone != "Europe/Paris" || m.CatchUp != schedule.None || m.CatchUpWindow != time.Hour {
				t.Fatalf("mornings = %+v, %v", m, err)
			}

			bad := append(decl, schedule.Schedule{ID: "broken", DefinitionID: "sweep", Cron: "not cron"})
			bad[0].Every = 20 * time.Minute
			if _, err := store.Apply(ctx, bad); !errors.Is(err, stead.ErrInvalid) {
				t.Fatalf("Apply with a bad cron = %v, want ErrInvalid", err)
			}
			if sc, _ := store.Get(ctx, "every-five"); sc.Every != 10*time.Minute {
				t.Fatalf("a refused Apply changed every-five to %v", sc.Every)
			}
			if _, err := store.Get(ctx, "broken"); !errors.Is(err, stead.ErrNotFound) {
				t.Fatalf("a refused Apply stored broken: %v", err)
			}
		})
	}
}

// TestApplyRacing: processes applying the same declarations at once create each schedule once.
func TestApplyRacing(t *testing.T) {
	for name, store := range declaredStores(t) {
		t.Run(name, func(t *testing.T) {
			def, err := chart.Parse("sweep", []byte(declaring))
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu    sync.Mutex
				total schedule.Applied
				wg    sync.WaitGroup
			)
			for range 4 {
				wg.Go(func() {
					a, err := store.Apply(context.Background(), schedule.Declared(def))
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					total.Created += a.Created
					total.Unchanged += a.Unchanged
					total.Updated += a.Updated
					mu.Unlock()
				})
			}
			wg.Wait()
			if total != (schedule.Applied{Created: 2, Unchanged: 6}) {
				t.Fatalf("four Applies = %+v, want 2 created and 6 unchanged", total)
			}
		})
	}
}
