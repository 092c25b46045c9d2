package schedule_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/schedule"
)

// starter is a Starter and Loader on a map: what it created, by id, with a status a test sets.
type starter struct {
	mu       sync.Mutex
	status   map[string]stead.Status
	order    []string
	cancels  []string
	failNext error
}

func newStarter() *starter { return &starter{status: make(map[string]stead.Status)} }

func (s *starter) Create(_ context.Context, def, id string, _ json.RawMessage) (*stead.Execution, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.failNext; err != nil {
		s.failNext = nil
		return nil, err
	}
	if _, ok := s.status[id]; ok {
		return nil, fmt.Errorf("create %q: %w", id, stead.ErrAlreadyExists)
	}
	s.status[id] = stead.StatusRunning
	s.order = append(s.order, id)
	return &stead.Execution{ID: id, DefinitionID: def, Status: stead.StatusRunning}, nil
}

func (s *starter) Load(_ context.Context, id string) (*stead.Execution, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.status[id]
	if !ok {
		return nil, stead.ErrNotFound
	}
	return &stead.Execution{ID: id, Status: st}, nil
}

func (s *starter) cancel(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancels = append(s.cancels, id)
	s.status[id] = stead.StatusCancelled
	return nil
}

func (s *starter) set(id string, st stead.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status[id] = st
}

func (s *starter) created() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.order)
}

// clock is a virtual clock a test moves by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

var t0 = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

type fixture struct {
	clock  *clock
	store  *schedule.Store
	st     *starter
	runner *schedule.Runner
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	c := &clock{now: t0}
	store, err := schedule.For(memstore.New())
	if err != nil {
		t.Fatal(err)
	}
	store.Clock = c.Now
	st := newStarter()
	return &fixture{clock: c, store: store, st: st,
		runner: &schedule.Runner{Schedules: store, Starter: st, Executions: st, Cancel: st.cancel, Clock: c.Now}}
}

// at moves the clock to t0+d and runs the runner until nothing more is due.
func (f *fixture) at(t *testing.T, d time.Duration) {
	t.Helper()
	f.clock.Set(t0.Add(d))
	for range 100 {
		due, err := f.store.Due(context.Background(), f.clock.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(due) == 0 {
			return
		}
		if _, err := f.runner.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("still due after 100 rounds")
}

func (f *fixture) create(t *testing.T, sc schedule.Schedule) {
	t.Helper()
	if sc.DefinitionID == "" {
		sc.DefinitionID = "def"
	}
	if _, err := f.store.Create(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
}

func tickIDs(id string, ds ...time.Duration) []string {
	var out []string
	for _, d := range ds {
		out = append(out, schedule.ExecutionID(id, t0.Add(d)))
	}
	return out
}

func TestRunnerFiresEachTickOnce(t *testing.T) {
	f := newFixture(t)
	f.create(t, schedule.Schedule{ID: "s", Every: time.Second, Overlap: schedule.AllowAll})
	for i := range 5 {
		f.at(t, time.Duration(i)*time.Second+500*time.Millisecond)
		f.at(t, time.Duration(i)*time.Second+700*time.Millisecond) // a second look finds nothing
	}
	want := tickIDs("s", 1*time.Second, 2*time.Second, 3*time.Second, 4*time.Second)
	if got := f.st.created(); !slices.Equal(got, want) {
		t.Fatalf("created %v, want %v", got, want)
	}
	sc, _ := f.store.Get(context.Background(), "s")
	if !sc.NextTick.Equal(t0.Add(5*time.Second)) || !sc.LastTick.Equal(t0.Add(4*time.Second)) || sc.LastExecutionID != want[3] {
		t.Fatalf("schedule %+v", sc)
	}
}

func TestRunnerCronInTimeZone(t *testing.T) {
	f := newFixture(t)
	f.create(t, schedule.Schedule{ID: "tokyo", Cron: "0 9 * * *", TimeZone: "Asia/Tokyo"})
	f.at(t, 48*time.Hour)
	// 09:00 in Tokyo is 00:00 UTC: the latest of the two days' ticks, once.
	if got, want := f.st.created(), tickIDs("tokyo", 48*time.Hour); !slices.Equal(got, want) {
		t.Fatalf("created %v, want %v", got, want)
	}
}

// TestReplayedTickCreatesNothingTwice replays a tick whose execution was created by a runner
// that died before its claim: the next runner creates nothing and only claims.
func TestReplayedTickCreatesNothingTwice(t *testing.T) {
	f := newFixture(t)
	f.create(t, schedule.Schedule{ID: "s", Every: time.Minute})
	id := schedule.ExecutionID("s", t0.Add(time.Minute))
	if _, err := f.st.Create(context.Background(), "def", id, nil); err != nil {
		t.Fatal(err)
	}
	f.st.set(id, stead.StatusDone)
	f.at(t, time.Minute)
	if got := f.st.created(); !slices.Equal(got, []string{id}) {
		t.Fatalf("created %v, want only %s", got, id)
	}
	sc, _ := f.store.Get(context.Background(), "s")
	if !sc.NextTick.Equal(t0.Add(2*time.Minute)) || sc.LastExecutionID != id {
		t.Fatalf("schedule %+v", sc)
	}
}

// TestFailedStartIsRetried: a tick whose start failed is not claimed, so the next look starts it.
func TestFailedStartIsRetried(t *testing.T) {
	f := newFixture(t)
	f.create(t, schedule.Schedule{ID: "s", Every: time.Minute})
	f.st.failNext = stead.ErrUnavailable
	f.clock.Set(t0.Add(time.Minute))
	if _, err := f.runner.RunOnce(context.Background()); !errors.Is(err, stead.ErrUnavailable) {
		t.Fatalf("RunOnce: %v", err)
	}
	f.at(t, time.Minute+time.Second)
	if got, want := f.st.created(), tickIDs("s", time.Minute); !slices.Equal(got, want) {
		t.Fatalf("created %v, want %v", got, want)
	}
}

func TestCatchUp(t *testing.T) {
	// Ticks every minute; the runner comes back at 60m30s, an hour after the schedule's creation.
	back := 60*time.Minute + 30*time.Second
	for _, tc := range []struct {
		policy schedule.CatchUp
		window time.Duration
		want   []time.Duration
	}{
		{schedule.Latest, 150 * time.Second, []time.Duration{60 * time.Minute}},
		{schedule.Latest, 10 * time.Second, []time.Duration{60 * time.Minute}},
		{schedule.All, 150 * time.Second, []time.Duration{58 * time.Minute, 59 * time.Minute, 60 * time.Minute}},
		{schedule.All, 10 * time.Second, nil},
		{schedule.None, 150 * time.Second, []time.Duration{60 * time.Minute}},
		{schedule.None, 10 * time.Second, nil},
	} {
		t.Run(fmt.Sprintf("%s_%v", tc.policy, tc.window), func(t *testing.T) {
			f := newFixture(t)
			f.create(t, schedule.Schedule{ID: "s", Every: time.Minute, CatchUp: tc.policy, CatchUpWindow: tc.window, Overlap: schedule.AllowAll})
			f.at(t, back)
			if got, want := f.st.created(), tickIDs("s", tc.want...); !slices.Equal(got, want) {
				t.Fatalf("created %v, want %v", got, want)
			}
			sc, _ := f.store.Get(context.Background(), "s")
			if !sc.NextTick.Equal(t0.Add(61 * time.Minute)) {
				t.Fatalf("next tick %v, want 61m", sc.NextTick.Sub(t0))
			}
			// Back on time: the next tick fires as usual.
			f.at(t, 61*time.Minute)
			if got := f.st.created(); len(got) != len(tc.want)+1 {
				t.Fatalf("after the next tick: %v", got)
			}
		})
	}
}

func TestOverlap(t *testing.T) {
	first := schedule.ExecutionID("s", t0.Add(time.Minute))
	second := schedule.ExecutionID("s", t0.Add(2*time.Minute))
	third := schedule.ExecutionID("s", t0.Add(3*time.Minute))
	t.Run("skip", func(t *testing.T) {
		f := newFixture(t)
		f.create(t, schedule.Schedule{ID: "s", Every: time.Minute, Overlap: schedule.Skip})
		f.at(t, time.Minute)
		f.at(t, 2*time.Minute) // first still running: dropped
		f.st.set(first, stead.StatusDone)
		f.at(t, 3*time.Minute)
		if got := f.st.created(); !slices.Equal(got, []string{first, third}) {
			t.Fatalf("created %v", got)
		}
	})
	t.Run("buffer_one", func(t *testing.T) {
		f := newFixture(t)
		f.create(t, schedule.Schedule{ID: "s", Every: time.Minute, Overlap: schedule.BufferOne, CatchUpWindow: time.Hour})
		f.at(t, time.Minute)
		f.clock.Set(t0.Add(2 * time.Minute))
		if _, err := f.runner.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := f.st.created(); !slices.Equal(got, []string{first}) {
			t.Fatalf("started while the first runs: %v", got)
		}
		f.clock.Set(t0.Add(2*time.Minute + 30*time.Second))
		f.st.set(first, stead.StatusFailed)
		f.at(t, 2*time.Minute+30*time.Second)
		if got := f.st.created(); !slices.Equal(got, []string{first, second}) {
			t.Fatalf("created %v: the held tick starts once the first ends", got)
		}
	})
	t.Run("cancel_previous", func(t *testing.T) {
		f := newFixture(t)
		f.create(t, schedule.Schedule{ID: "s", Every: time.Minute, Overlap: schedule.CancelPrevious})
		f.at(t, time.Minute)
		f.at(t, 2*time.Minute)
		if got := f.st.created(); !slices.Equal(got, []string{first, second}) {
			t.Fatalf("created %v", got)
		}
		if !slices.Equal(f.st.cancels, []string{first}) {
			t.Fatalf("cancelled %v", f.st.cancels)
		}
	})
	t.Run("allow_all", func(t *testing.T) {
		f := newFixture(t)
		f.create(t, schedule.Schedule{ID: "s", Every: time.Minute, Overlap: schedule.AllowAll})
		f.at(t, time.Minute)
		f.at(t, 2*time.Minute)
		if got := f.st.created(); !slices.Equal(got, []string{first, second}) {
			t.Fatalf("created %v", got)
		}
	})
}

func TestPausedScheduleDoesNotFire(t *testing.T) {
	f := newFixture(t)
	f.create(t, schedule.Schedule{ID: "s", Every: time.Minute})
	if _, err := f.store.Pause(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	f.at(t, 10*time.Minute)
	if got := f.st.created(); len(got) != 0 {
		t.Fatalf("a paused schedule started %v", got)
	}
	f.clock.Set(t0.Add(10*time.Minute + time.Second))
	if _, err := f.store.Resume(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	f.at(t, 11*time.Minute)
	if got, want := f.st.created(), tickIDs("s", 11*time.Minute); !slices.Equal(got, want) {
		t.Fatalf("created %v, want %v (ticks missed while paused are not caught up)", got, want)
	}
}

func TestJitterDelaysTheStart(t *testing.T) {
	f := newFixture(t)
	f.create(t, schedule.Schedule{ID: "s", Every: time.Minute, Jitter: 30 * time.Second})
	f.clock.Set(t0.Add(time.Minute))
	var soonest time.Time
	var err error
	for range 2 {
		if soonest, err = f.runner.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(f.st.created()) > 0 {
			break // a jitter of zero, possible
		}
		if soonest.Before(t0.Add(time.Minute)) || soonest.After(t0.Add(90*time.Second)) {
			t.Fatalf("runner asks to come back at %v", soonest)
		}
		f.clock.Set(soonest)
	}
	if got, want := f.st.created(), tickIDs("s", time.Minute); !slices.Equal(got, want) {
		t.Fatalf("created %v, want %v", got, want)
	}
}

func TestTriggerAndBackfill(t *testing.T) {
	f := newFixture(t)
	f.create(t, schedule.Schedule{ID: "s", Every: time.Minute})
	f.at(t, 2*time.Minute) // fires the 2m tick
	exe, err := f.runner.Trigger(context.Background(), "s")
	if err != nil || exe.ID != "s@manual-"+t0.Add(2*time.Minute).Format(time.RFC3339Nano) {
		t.Fatalf("trigger: %v %v", exe, err)
	}
	sc, _ := f.store.Get(context.Background(), "s")
	if sc.LastExecutionID != schedule.ExecutionID("s", t0.Add(2*time.Minute)) {
		t.Fatalf("trigger moved the last execution: %+v", sc)
	}
	started, err := f.runner.Backfill(context.Background(), "s", t0, t0.Add(4*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// 0m, 1m and 3m; 2m fired already.
	if want := tickIDs("s", 0, time.Minute, 3*time.Minute); !slices.Equal(started, want) {
		t.Fatalf("backfilled %v, want %v", started, want)
	}
	if _, err := f.runner.Backfill(context.Background(), "s", t0, t0.Add(time.Hour*24)); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("oversized backfill: %v", err)
	}
}

// TestRunReturnsOnCancel: Run leaves nothing behind once ctx ends.
func TestRunReturnsOnCancel(t *testing.T) {
	f := newFixture(t)
	f.runner.Clock = nil
	f.runner.Poll = 5 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.runner.Run(ctx) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
}

// TestRunOnceLooksAhead: a schedule due before the next poll is looked at when it is due, not a
// poll late.
func TestRunOnceLooksAhead(t *testing.T) {
	f := newFixture(t)
	f.runner.Poll = time.Hour
	f.create(t, schedule.Schedule{ID: "s", Every: time.Minute})
	soonest, err := f.runner.RunOnce(context.Background())
	if err != nil || !soonest.Equal(t0.Add(time.Minute)) {
		t.Fatalf("RunOnce: come back at %v (%v), want the tick at 1m", soonest, err)
	}
}
