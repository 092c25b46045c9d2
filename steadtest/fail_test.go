package steadtest_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/steadtest"
	"github.com/steadhq/stead/worker"
)

// fakeTB records what a kit reports instead of failing the real test. Fatal ends the calling
// goroutine as testing.T's does, so run the code under test with run.
type fakeTB struct {
	testing.TB
	mu       sync.Mutex
	msgs     []string
	fatal    bool
	cleanups []func()
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	f.mu.Lock()
	f.fatal = true
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *fakeTB) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) run(fn func()) {
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	<-done
}
func (f *fakeTB) report() string { f.mu.Lock(); defer f.mu.Unlock(); return strings.Join(f.msgs, "\n") }
func (f *fakeTB) close() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestFailuresSayWhatTheKitSaw(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		do    func(k *steadtest.Kit)
		fatal bool
		want  []string
	}{
		{"wrong state", func(k *steadtest.Kit) { k.AssertState("req-1", "approved") },
			false, []string{`want state approved`, `in state "waiting"`, "timers waiting@2026-01-02T00:00:00Z"}},
		{"wrong status", func(k *steadtest.Kit) { k.AssertStatus("req-1", stead.StatusDone) },
			false, []string{"want status done", "it is running"}},
		{"wrong context", func(k *steadtest.Kit) { k.AssertContext("req-1", "amount", 12) },
			false, []string{`context key "amount" is 10, want 12`}},
		{"unset context", func(k *steadtest.Kit) { k.AssertContext("req-1", "nope", 1) },
			false, []string{`context key "nope" is not set`}},
		{"call count", func(k *steadtest.Kit) { k.AssertCalls("notify", 2) },
			false, []string{"action notify ran 1 times (keys [req-1:1:0]), want 2"}},
		{"emit count", func(k *steadtest.Kit) { k.AssertEmitted("req-1", "stead.finished", 1) },
			false, []string{"req-1 emitted 0 stead.finished events, want 1; it emitted []"}},
		{"expect times out", func(k *steadtest.Kit) { k.Expect("req-1", steadtest.InState("approved"), time.Hour) },
			true, []string{`"req-1" is not in state approved within 1h0m0s`}},
		{"unknown execution", func(k *steadtest.Kit) { k.Send("nobody", "approve", nil) },
			true, []string{`send approve to "nobody"`, "not found"}},
		{"refused command", func(k *steadtest.Kit) { k.Control("req-1", worker.Command{Op: worker.OpResume}) },
			true, []string{`resume "req-1"`}},
		{"register after start", func(k *steadtest.Kit) { k.Action("late", noop) },
			true, []string{"action late registered after the kit started"}},
		{"advance backwards", func(k *steadtest.Kit) { k.AdvanceTo(k.Now().Add(-time.Second)) },
			true, []string{"invalid", "before the clock's"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := &fakeTB{TB: t}
			defer tb.close()
			k := steadtest.New(tb).Action("notify", noop).Action("page_manager", noop).DefineYAML("approval.yaml", approval)
			tb.run(func() { k.Create("approval", "req-1", map[string]any{"amount": 10}) })
			if got := tb.report(); got != "" {
				t.Fatalf("setup reported %q", got)
			}
			tb.run(func() { tc.do(k) })
			got := tb.report()
			if tb.fatal != tc.fatal {
				t.Errorf("fatal %v, want %v (%s)", tb.fatal, tc.fatal, got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("report %q lacks %q", got, w)
				}
			}
		})
	}
}

func TestSuspendedExecutionKeepsItsTimerUntilResumed(t *testing.T) {
	t.Parallel()
	k := approvalKit(t)
	start := k.Now()
	k.Create("approval", "req-1", nil)
	k.Control("req-1", worker.Command{Op: worker.OpSuspend})
	real := time.Now()
	k.Advance(30 * 24 * time.Hour) // the timeout fires into the parked queue, a month passes
	if took := time.Since(real); took > 5*time.Second {
		t.Errorf("a suspended month took %v of real time", took)
	}
	k.AssertState("req-1", "waiting")
	k.AssertStatus("req-1", stead.StatusSuspended)
	k.Control("req-1", worker.Command{Op: worker.OpResume})
	exe := k.Expect("req-1", steadtest.InState("escalated"), time.Minute)
	if late := exe.UpdatedAt.Sub(start.Add(30 * 24 * time.Hour)); late <= 0 || late > worker.DefaultSuspendRecheck+time.Microsecond {
		t.Errorf("the parked timeout applied %v after the resume, want within %v", late, worker.DefaultSuspendRecheck)
	}
}

func TestAFlowThatNeverSettlesIsReported(t *testing.T) {
	t.Parallel()
	tb := &fakeTB{TB: t}
	defer tb.close()
	tick := func(chart.ActionContext) (chart.ActionResult, error) {
		return chart.ActionResult{Send: []chart.Message{{Kind: "tick"}}}, nil
	}
	epoch := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	k := steadtest.New(tb, steadtest.WithSettleTimeout(200*time.Millisecond), steadtest.WithEpoch(epoch)).
		Action("tick", tick).
		DefineYAML("clock.yaml", "id: clock\ninitial: ticking\nstates:\n  ticking:\n    entry: [tick]\n    on: {tick: ticking}\n")
	if !k.Now().Equal(epoch) {
		t.Errorf("clock starts at %v, want %v", k.Now(), epoch)
	}
	tb.run(func() { k.Create("clock", "c-1", nil) })
	if got := tb.report(); !tb.fatal || !strings.Contains(got, "did not settle within 200ms (real time) at 2030-06-01T12:00:00Z") {
		t.Errorf("report %q (fatal %v)", got, tb.fatal)
	}
	if n := len(k.Calls("tick")); n < 2 {
		t.Errorf("tick ran %d times, want it looping", n)
	}
}

func TestAKitThatCannotStartSaysWhy(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		kit  func(tb testing.TB) *steadtest.Kit
		want string
	}{
		{"no definition", func(tb testing.TB) *steadtest.Kit { return steadtest.New(tb) }, "no definition"},
		{"an action not registered", func(tb testing.TB) *steadtest.Kit {
			return steadtest.New(tb).DefineYAML("approval.yaml", approval)
		}, "notify"},
		{"a definition that does not parse", func(tb testing.TB) *steadtest.Kit {
			return steadtest.New(tb).DefineYAML("broken.yaml", "initial: [")
		}, "broken.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := &fakeTB{TB: t}
			defer tb.close()
			tb.run(func() { tc.kit(tb).Create("approval", "req-1", nil) })
			if got := tb.report(); !tb.fatal || !strings.Contains(got, tc.want) {
				t.Errorf("report %q (fatal %v), want it to name %q", got, tb.fatal, tc.want)
			}
		})
	}
}
