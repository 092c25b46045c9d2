// Package schedtest is the conformance suite of schedule.Backend: the rules every backend that
// keeps schedules (memstore, sqlitestore, pgstore) must follow, by name, run through the checked
// schedule.Store. A backend's test calls Run with a factory of fresh, empty stores.
package schedtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/schedule"
)

// Factory returns a fresh, empty schedule backend and registers its release with t.Cleanup. It
// is called from parallel subtests.
type Factory func(t *testing.T) schedule.Backend

type rule struct {
	name string
	run  func(t *testing.T, s *schedule.Store)
}

// Run runs every rule, each on its own store, in parallel.
func Run(t *testing.T, f Factory) {
	t.Helper()
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			s := schedule.New(f(t))
			s.Clock = func() time.Time { return epoch }
			r.run(t, s)
		})
	}
}

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var ctx = context.Background()

func every(id string) schedule.Schedule {
	return schedule.Schedule{ID: id, DefinitionID: "def", Context: json.RawMessage(`{"a":1}`), Every: time.Second}
}

func mustCreate(t *testing.T, s *schedule.Store, sc schedule.Schedule) *schedule.Schedule {
	t.Helper()
	out, err := s.Create(ctx, sc)
	if err != nil {
		t.Fatalf("create %q: %v", sc.ID, err)
	}
	return out
}

var rules = []rule{
	{"create_get_round_trip", func(t *testing.T, s *schedule.Store) {
		sc := every("a")
		sc.Jitter, sc.Overlap, sc.CatchUp, sc.CatchUpWindow = 200*time.Millisecond, schedule.BufferOne, schedule.All, time.Hour
		created := mustCreate(t, s, sc)
		got, err := s.Get(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if got.DefinitionID != "def" || string(got.Context) != `{"a":1}` || got.Every != time.Second ||
			got.Jitter != 200*time.Millisecond || got.Overlap != schedule.BufferOne || got.CatchUp != schedule.All ||
			got.CatchUpWindow != time.Hour || got.Paused || got.Version != 1 {
			t.Fatalf("got %+v", got)
		}
		if want := epoch.Add(time.Second); !got.NextTick.Equal(want) || !created.NextTick.Equal(want) {
			t.Fatalf("next tick %v, want %v", got.NextTick, want)
		}
		if !got.LastTick.IsZero() || got.LastExecutionID != "" || !got.CreatedAt.Equal(epoch) {
			t.Fatalf("got %+v", got)
		}
	}},
	{"cron_time_zone_defaults", func(t *testing.T, s *schedule.Store) {
		got := mustCreate(t, s, schedule.Schedule{ID: "c", DefinitionID: "def", Cron: "30 9 * * *", TimeZone: "Europe/Paris"})
		if want := time.Date(2026, 3, 2, 8, 30, 0, 0, time.UTC); !got.NextTick.Equal(want) {
			t.Fatalf("next tick %v, want %v (09:30 in Paris, UTC+1)", got.NextTick, want)
		}
		got = mustCreate(t, s, schedule.Schedule{ID: "secs", DefinitionID: "def", Cron: "*/15 * * * * *"})
		if want := epoch.Add(15 * time.Second); !got.NextTick.Equal(want) {
			t.Fatalf("next tick %v, want %v", got.NextTick, want)
		}
		got, _ = s.Get(ctx, "secs")
		if got.Overlap != schedule.Skip || got.CatchUp != schedule.Latest || got.CatchUpWindow != schedule.DefaultCatchUpWindow || got.TimeZone != "UTC" {
			t.Fatalf("defaults: %+v", got)
		}
	}},
	{"create_taken_id", func(t *testing.T, s *schedule.Store) {
		mustCreate(t, s, every("a"))
		other := every("a")
		other.DefinitionID = "other"
		if _, err := s.Create(ctx, other); !errors.Is(err, stead.ErrAlreadyExists) {
			t.Fatalf("err %v, want ErrAlreadyExists", err)
		}
		if got, _ := s.Get(ctx, "a"); got.DefinitionID != "def" {
			t.Fatalf("overwritten: %+v", got)
		}
	}},
	{"missing", func(t *testing.T, s *schedule.Store) {
		if _, err := s.Get(ctx, "nope"); !errors.Is(err, stead.ErrNotFound) {
			t.Fatalf("get: %v", err)
		}
		if err := s.Delete(ctx, "nope"); !errors.Is(err, stead.ErrNotFound) {
			t.Fatalf("delete: %v", err)
		}
		sc := every("nope")
		sc.Version = 1
		if _, err := s.Update(ctx, sc); !errors.Is(err, stead.ErrNotFound) {
			t.Fatalf("update: %v", err)
		}
		if won, err := s.Claim(ctx, "nope", epoch, schedule.Advance{NextTick: epoch.Add(time.Second)}); won || err != nil {
			t.Fatalf("claim: %v %v", won, err)
		}
	}},
	{"update_compares_version", func(t *testing.T, s *schedule.Store) {
		sc := mustCreate(t, s, every("a"))
		sc.DefinitionID = "def2"
		up, err := s.Update(ctx, *sc)
		if err != nil {
			t.Fatal(err)
		}
		if up.Version != 2 {
			t.Fatalf("version %d", up.Version)
		}
		sc.DefinitionID = "stale"
		_, err = s.Update(ctx, *sc) // still at version 1
		var ce *stead.ConflictError
		if !errors.As(err, &ce) || ce.Found != 2 {
			t.Fatalf("stale update: %v", err)
		}
		if got, _ := s.Get(ctx, "a"); got.DefinitionID != "def2" || got.Version != 2 {
			t.Fatalf("got %+v", got)
		}
	}},
	{"delete", func(t *testing.T, s *schedule.Store) {
		mustCreate(t, s, every("a"))
		if err := s.Delete(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, "a"); !errors.Is(err, stead.ErrNotFound) {
			t.Fatalf("get after delete: %v", err)
		}
	}},
	{"list_pages_by_id", func(t *testing.T, s *schedule.Store) {
		for _, id := range []string{"c", "a", "b", "é"} {
			mustCreate(t, s, every(id))
		}
		page, err := s.List(ctx, "", 2)
		if err != nil {
			t.Fatal(err)
		}
		if ids(page) != "a,b" {
			t.Fatalf("page 1 %s", ids(page))
		}
		page, _ = s.List(ctx, "b", 0)
		if ids(page) != "c,é" {
			t.Fatalf("page 2 %s", ids(page))
		}
	}},
	{"due_skips_paused_and_future", func(t *testing.T, s *schedule.Store) {
		mustCreate(t, s, every("one"))
		slow := every("slow")
		slow.Every = time.Hour
		mustCreate(t, s, slow)
		p := every("paused")
		p.Paused = true
		mustCreate(t, s, p)
		due, err := s.Due(ctx, epoch.Add(time.Second), 0)
		if err != nil {
			t.Fatal(err)
		}
		if ids(due) != "one" {
			t.Fatalf("due %s", ids(due))
		}
		if due, _ := s.Due(ctx, epoch.Add(2*time.Hour), 0); ids(due) != "one,slow" {
			t.Fatalf("due later %s (earliest first)", ids(due))
		}
	}},
	{"claim_compares_next_tick", func(t *testing.T, s *schedule.Store) {
		sc := mustCreate(t, s, every("a"))
		a := schedule.Advance{NextTick: sc.NextTick.Add(time.Second), Fired: true, LastTick: sc.NextTick, LastExecutionID: "a@x"}
		if won, err := s.Claim(ctx, "a", sc.NextTick, a); !won || err != nil {
			t.Fatalf("first claim: %v %v", won, err)
		}
		if won, err := s.Claim(ctx, "a", sc.NextTick, a); won || err != nil {
			t.Fatalf("second claim of the same tick: %v %v", won, err)
		}
		got, _ := s.Get(ctx, "a")
		if !got.NextTick.Equal(a.NextTick) || !got.LastTick.Equal(sc.NextTick) || got.LastExecutionID != "a@x" || got.Version != 2 {
			t.Fatalf("after claim %+v", got)
		}
		// A claim that fires nothing keeps the last tick.
		if won, _ := s.Claim(ctx, "a", a.NextTick, schedule.Advance{NextTick: a.NextTick.Add(time.Second)}); !won {
			t.Fatal("dropping claim lost")
		}
		got, _ = s.Get(ctx, "a")
		if !got.LastTick.Equal(sc.NextTick) || got.LastExecutionID != "a@x" {
			t.Fatalf("dropping claim changed the last tick: %+v", got)
		}
	}},
	{"claim_refused_while_paused", func(t *testing.T, s *schedule.Store) {
		sc := mustCreate(t, s, every("a"))
		if _, err := s.Pause(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if won, err := s.Claim(ctx, "a", sc.NextTick, schedule.Advance{NextTick: sc.NextTick.Add(time.Second)}); won || err != nil {
			t.Fatalf("claim of a paused schedule: %v %v", won, err)
		}
		s.Clock = func() time.Time { return epoch.Add(time.Hour + 300*time.Millisecond) }
		got, err := s.Resume(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if want := epoch.Add(time.Hour + time.Second); got.Paused || !got.NextTick.Equal(want) {
			t.Fatalf("resumed %+v, want next tick %v", got, want)
		}
	}},
	{"claim_races_once", func(t *testing.T, s *schedule.Store) {
		sc := mustCreate(t, s, every("a"))
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				won, err := s.Claim(ctx, "a", sc.NextTick, schedule.Advance{NextTick: sc.NextTick.Add(time.Second)})
				if err != nil {
					t.Error(err)
				}
				if won {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d claims won, want 1", wins.Load())
		}
	}},
	{"bad_input_writes_nothing", func(t *testing.T, s *schedule.Store) {
		bad := map[string]func(*schedule.Schedule){
			"empty id":         func(sc *schedule.Schedule) { sc.ID = "" },
			"nul id":           func(sc *schedule.Schedule) { sc.ID = "a\x00b" },
			"invalid utf-8 id": func(sc *schedule.Schedule) { sc.ID = "a\xffb" },
			"long id":          func(sc *schedule.Schedule) { sc.ID = strings.Repeat("x", schedule.MaxIDLen+1) },
			"empty definition": func(sc *schedule.Schedule) { sc.DefinitionID = "" },
			"nul definition":   func(sc *schedule.Schedule) { sc.DefinitionID = "d\x00" },
			"context not json": func(sc *schedule.Schedule) { sc.Context = json.RawMessage(`{`) },
			"context array":    func(sc *schedule.Schedule) { sc.Context = json.RawMessage(`[1]`) },
			"context \\u0000":  func(sc *schedule.Schedule) { sc.Context = json.RawMessage(`{"a":"\u0000"}`) },
			"oversized context": func(sc *schedule.Schedule) {
				sc.Context = json.RawMessage(`{"a":"` + strings.Repeat("x", schedule.MaxContext) + `"}`)
			},
			"no timing":         func(sc *schedule.Schedule) { sc.Every = 0 },
			"both timings":      func(sc *schedule.Schedule) { sc.Cron = "* * * * *" },
			"short interval":    func(sc *schedule.Schedule) { sc.Every = time.Millisecond },
			"bad cron":          func(sc *schedule.Schedule) { sc.Every, sc.Cron = 0, "61 * * * *" },
			"cron words":        func(sc *schedule.Schedule) { sc.Every, sc.Cron = 0, "every monday" },
			"cron never fires":  func(sc *schedule.Schedule) { sc.Every, sc.Cron = 0, "0 0 30 2 *" },
			"cron @every":       func(sc *schedule.Schedule) { sc.Every, sc.Cron = 0, "@every 5m" },
			"cron TZ prefix":    func(sc *schedule.Schedule) { sc.Every, sc.Cron = 0, "CRON_TZ=Asia/Tokyo * * * * *" },
			"unknown zone":      func(sc *schedule.Schedule) { sc.Every, sc.Cron, sc.TimeZone = 0, "* * * * *", "Mars/Olympus" },
			"zone on interval":  func(sc *schedule.Schedule) { sc.TimeZone = "Europe/Paris" },
			"negative jitter":   func(sc *schedule.Schedule) { sc.Jitter = -time.Second },
			"jitter ≥ interval": func(sc *schedule.Schedule) { sc.Jitter = time.Second },
			"unknown overlap":   func(sc *schedule.Schedule) { sc.Overlap = "sometimes" },
			"unknown catch-up":  func(sc *schedule.Schedule) { sc.CatchUp = "maybe" },
			"negative window":   func(sc *schedule.Schedule) { sc.CatchUpWindow = -time.Second },
		}
		for name, mutate := range bad {
			sc := every("x")
			mutate(&sc)
			if _, err := s.Create(ctx, sc); !errors.Is(err, stead.ErrInvalid) {
				t.Errorf("%s: create: %v, want ErrInvalid", name, err)
			}
		}
		mustCreate(t, s, every("x"))
		for name, mutate := range bad {
			sc, _ := s.Get(ctx, "x")
			mutate(sc)
			if sc.ID != "x" {
				continue
			}
			if _, err := s.Update(ctx, *sc); !errors.Is(err, stead.ErrInvalid) {
				t.Errorf("%s: update: %v, want ErrInvalid", name, err)
			}
		}
		if page, _ := s.List(ctx, "", 0); ids(page) != "x" {
			t.Fatalf("stored %s", ids(page))
		}
		if got, _ := s.Get(ctx, "x"); got.Version != 1 {
			t.Fatalf("a refused update wrote: %+v", got)
		}
		for _, id := range []string{"", "a\x00", "\xff"} {
			if _, err := s.Get(ctx, id); !errors.Is(err, stead.ErrInvalid) {
				t.Errorf("get %q: %v", id, err)
			}
			if err := s.Delete(ctx, id); !errors.Is(err, stead.ErrInvalid) {
				t.Errorf("delete %q: %v", id, err)
			}
		}
	}},
}

func ids(scs []*schedule.Schedule) string {
	var b strings.Builder
	for i, sc := range scs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, sc.ID)
	}
	return b.String()
}
