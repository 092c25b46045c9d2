package chart

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
)

const retryChart = `
initial: idle
states:
  idle:
    on:
      go: {target: charging, actions: [prepare]}
      ping: {actions: [note]}
      refuse: declined
  charging:
    entry: [charge]
    on:
      ping: {actions: [note]}
      finish: paid
    %s
  paid: {final: success}
  declined: {final: failure}
retry:
  charge: {attempts: 3, backoff: 10s, factor: 2, max: 15s}
`

// retryActions makes "charge" fail while its attempt is below the context's fail_until, and
// records every call with its attempt and idempotency key.
func retryActions(calls *[]string) map[string]Action {
	record := func(name string) Action {
		return func(a ActionContext) (ActionResult, error) {
			*calls = append(*calls, fmt.Sprintf("%s#%d@%s", name, a.Attempt, a.Key()))
			return ActionResult{}, nil
		}
	}
	return map[string]Action{
		"prepare": func(a ActionContext) (ActionResult, error) {
			*calls = append(*calls, fmt.Sprintf("prepare#%d@%s", a.Attempt, a.Key()))
			return ActionResult{Set: map[string]any{"prepared": a.Float("prepared") + 1}}, nil
		},
		"note": record("note"),
		"charge": func(a ActionContext) (ActionResult, error) {
			*calls = append(*calls, fmt.Sprintf("charge#%d@%s", a.Attempt, a.Key()))
			if float64(a.Attempt) < a.Float("fail_until") {
				return ActionResult{}, errors.New("card network unavailable")
			}
			return ActionResult{Set: map[string]any{"charged": true}}, nil
		},
	}
}

func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		onError   string
		failUntil int
		// after go, ping and the two retry delays
		status   stead.Status
		path     string
		deferred []string
		calls    []string
	}{
		{name: "succeeds on the third attempt", failUntil: 3, status: stead.StatusRunning, path: "charging",
			calls: []string{"prepare#1@root:1:0", "charge#1@root:1:1", "prepare#2@root:1:0", "charge#2@root:1:1",
				"prepare#3@root:1:0", "charge#3@root:1:1", "note#1@root:4:0"}},
		{name: "succeeds on the second attempt", failUntil: 2, status: stead.StatusRunning, path: "charging",
			calls: []string{"prepare#1@root:1:0", "charge#1@root:1:1", "prepare#2@root:1:0", "charge#2@root:1:1",
				"note#1@root:3:0"}},
		{name: "exhausted, takes the error transition", onError: "on_error: {target: declined}", failUntil: 9,
			status: stead.StatusDone, path: "declined",
			calls: []string{"prepare#1@root:1:0", "charge#1@root:1:1", "prepare#2@root:1:0", "charge#2@root:1:1",
				"prepare#3@root:1:0", "charge#3@root:1:1"}},
		{name: "exhausted, fails and keeps what waited", failUntil: 9, status: stead.StatusFailed, path: "charging",
			deferred: []string{"ping"},
			calls: []string{"prepare#1@root:1:0", "charge#1@root:1:1", "prepare#2@root:1:0", "charge#2@root:1:1",
				"prepare#3@root:1:0", "charge#3@root:1:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls []string
			var log logger
			eng := mustEngine(t, fmt.Sprintf(retryChart, tt.onError), &log, retryActions(&calls))
			s := newSim(t, eng)
			s.create("root", fmt.Sprintf(`{"fail_until":%d}`, tt.failUntil))
			s.drain()
			before := s.exes["root"].Clone()
			s.send("root", "go", "")

			// The first failure commits nothing of the step: the event waits at the head of
			// Deferred and the retry timer is armed for the backoff.
			exe := s.exes["root"]
			if exe.ActivePath != "idle" || string(exe.Context) != string(before.Context) {
				t.Fatalf("after a failed attempt: path %q context %s, want idle and %s", exe.ActivePath, exe.Context, before.Context)
			}
			if got := kinds(exe.Deferred); !slices.Equal(got, []string{"go"}) {
				t.Fatalf("deferred = %v, want [go]", got)
			}
			if at, want := exe.Timers[RetryTimerPath], s.now.Add(10*time.Second); !at.Equal(want) {
				t.Fatalf("retry timer at %v, want %v", at, want)
			}
			if exe.InvokeSeq[retryAttemptsKey] != 1 {
				t.Fatalf("attempts = %d, want 1", exe.InvokeSeq[retryAttemptsKey])
			}

			// An event that arrives meanwhile waits behind the retried one.
			s.send("root", "ping", "")
			if got := kinds(s.exes["root"].Deferred); !slices.Equal(got, []string{"go", "ping"}) {
				t.Fatalf("deferred = %v, want [go ping]", got)
			}
			s.advance(10 * time.Second)
			if tt.failUntil > 2 {
				// The second delay is 20s, capped at 15s.
				if at, want := s.exes["root"].Timers[RetryTimerPath], s.now.Add(15*time.Second); !at.Equal(want) {
					t.Fatalf("second retry timer at %v, want %v", at, want)
				}
				s.advance(15 * time.Second)
			}
			exe = s.exes["root"]
			if exe.Status != tt.status || exe.ActivePath != tt.path {
				t.Fatalf("ended %s in %q, want %s in %q", exe.Status, exe.ActivePath, tt.status, tt.path)
			}
			if got := kinds(exe.Deferred); !slices.Equal(got, tt.deferred) {
				t.Fatalf("deferred = %v, want %v", got, tt.deferred)
			}
			if _, ok := exe.Timers[RetryTimerPath]; ok || len(exe.InvokeSeq) > 0 {
				t.Fatalf("retry state left behind: timers %v, counters %v", exe.Timers, exe.InvokeSeq)
			}
			if !slices.Equal(calls, tt.calls) {
				t.Fatalf("calls:\n got %v\nwant %v", calls, tt.calls)
			}
			if tt.status == stead.StatusFailed {
				if exe.DeadLetter == nil || exe.DeadLetter.Event.Kind != "go" || !strings.Contains(exe.Error, "card network") {
					t.Fatalf("failed without the dead letter of go: %+v, error %q", exe.DeadLetter, exe.Error)
				}
			}
		})
	}
}

func kinds(evs []stead.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

// Abandoning a pending retry — a cancel, a reset, a set-state — disarms its timer and drops the
// event it held.
func TestRetryAbandoned(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		apply func(eng *Engine, exe *stead.Execution, now time.Time) (*stead.Execution, stead.Bundle, error)
		want  stead.Status
		path  string
		keep  []string
	}{
		{"cancel", func(eng *Engine, exe *stead.Execution, now time.Time) (*stead.Execution, stead.Bundle, error) {
			return eng.Step(exe, stead.Event{ID: "c", Kind: KindCancel}, now)
		}, stead.StatusCancelled, "idle", nil},
		{"reset", func(eng *Engine, exe *stead.Execution, now time.Time) (*stead.Execution, stead.Bundle, error) {
			return eng.Control(exe, stead.Event{ID: "r", Kind: KindReset}, now)
		}, stead.StatusRunning, "idle", nil},
		{"set-state", func(eng *Engine, exe *stead.Execution, now time.Time) (*stead.Execution, stead.Bundle, error) {
			return eng.Control(exe, stead.Event{ID: "s", Kind: KindSetState, Data: []byte(`{"state":"paid"}`)}, now)
		}, stead.StatusDone, "paid", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls []string
			var log logger
			eng := mustEngine(t, fmt.Sprintf(retryChart, ""), &log, retryActions(&calls))
			s := newSim(t, eng)
			s.create("root", `{"fail_until":9}`)
			s.drain()
			s.send("root", "go", "")
			s.send("root", "ping", "")
			out, b, err := tt.apply(eng, s.exes["root"], s.now)
			if err != nil {
				t.Fatal(err)
			}
			if err := eng.CheckExecution(out); err != nil {
				t.Fatal(err)
			}
			if out.Status != tt.want || out.ActivePath != tt.path {
				t.Fatalf("%s in %q, want %s in %q", out.Status, out.ActivePath, tt.want, tt.path)
			}
			if _, ok := out.Timers[RetryTimerPath]; ok || len(out.InvokeSeq) > 0 {
				t.Fatalf("retry state left behind: %v %v", out.Timers, out.InvokeSeq)
			}
			if !slices.ContainsFunc(b.Timers, func(op stead.TimerOp) bool {
				return op.Path == RetryTimerPath && op.Action == stead.TimerCancel
			}) {
				t.Fatalf("no cancel of the retry timer in %v", b.Timers)
			}
			if got := kinds(out.Deferred); !slices.Equal(got, tt.keep) {
				t.Fatalf("deferred = %v, want %v", got, tt.keep)
			}
		})
	}
}

// A retry timeout of an earlier arming, or one that arrives with no retry pending, is ignored.
func TestRetryStaleTimeoutIgnored(t *testing.T) {
	t.Parallel()
	var calls []string
	var log logger
	eng := mustEngine(t, fmt.Sprintf(retryChart, ""), &log, retryActions(&calls))
	s := newSim(t, eng)
	s.create("root", `{"fail_until":9}`)
	s.drain()
	s.send("root", "go", "")
	exe := s.exes["root"]
	stale := TimeoutEvent("root", RetryTimerPath, exe.Timers[RetryTimerPath].Add(-time.Second))
	out, b, err := eng.Step(exe, stale, s.now)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(calls); n != 2 || !b.StateOnly() || kinds(out.Deferred)[0] != "go" {
		t.Fatalf("a stale retry timeout ran %d calls, bundle %+v", n-2, b)
	}
	idle := &stead.Execution{ID: "y", DefinitionID: eng.id, Status: stead.StatusRunning, ActivePath: "idle", Context: []byte(`{}`)}
	out, b, err = eng.Step(idle, TimeoutEvent("y", RetryTimerPath, s.now), s.now)
	if err != nil {
		t.Fatal(err)
	}
	if out.ActivePath != "idle" || !b.StateOnly() {
		t.Fatalf("a retry timeout without a retry did something: %q %+v", out.ActivePath, b)
	}
}

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		r    Retry
		n    int
		want time.Duration
	}{
		{Retry{Backoff: time.Second}, 1, time.Second},
		{Retry{Backoff: time.Second}, 2, 2 * time.Second},
		{Retry{Backoff: time.Second}, 4, 8 * time.Second},
		{Retry{Backoff: time.Second, Factor: 3}, 3, 9 * time.Second},
		{Retry{Backoff: time.Second, Factor: 1}, 9, time.Second},
		{Retry{Backoff: time.Second, Max: 5 * time.Second}, 10, 5 * time.Second},
		{Retry{Backoff: time.Hour, Factor: 100}, 900, MaxRetryDelay},
	}
	for _, tt := range tests {
		if got := tt.r.delay(tt.n, "x", "e"); got != tt.want {
			t.Errorf("%+v attempt %d: delay %v, want %v", tt.r, tt.n, got, tt.want)
		}
	}
	// Jitter takes off at most its share, the same for the same execution, event and attempt,
	// and spreads executions apart.
	r := Retry{Backoff: 10 * time.Second, Jitter: 0.5}
	seen := map[time.Duration]bool{}
	for i := range 50 {
		id := fmt.Sprintf("exe-%d", i)
		d := r.delay(2, id, "ev")
		if d > 20*time.Second || d < 10*time.Second {
			t.Fatalf("jittered delay %v outside [10s, 20s]", d)
		}
		if d != r.delay(2, id, "ev") {
			t.Fatal("jitter is not deterministic")
		}
		seen[d] = true
	}
	if len(seen) < 40 {
		t.Fatalf("jitter gave only %d distinct delays for 50 executions", len(seen))
	}
}

func TestRetryValidation(t *testing.T) {
	t.Parallel()
	base := `initial: a
states:
  a: {entry: [work], on: {go: b}}
  b: {final: success}
retry:
`
	tests := []struct {
		policy string
		want   string
	}{
		{"  work: {attempts: 0, backoff: 1s}", "test.yaml:6:3: retry of \"work\": attempts 0 must be 2..1000 (the first run counts), or 1 for none"},
		{"  default: {attempts: 3}", "test.yaml:6:3: default retry: backoff 0s must be positive"},
		{"  work: never", "test.yaml:6:9: expected a mapping"},
		{"  work: {attempts: 3}", "test.yaml:6:3: retry of \"work\": backoff 0s must be positive"},
		{"  work: {attempts: 3, backoff: 1s, factor: 0.5}", "factor 0.5 must be 1..100"},
		{"  work: {attempts: 3, backoff: 1m, max: 1s}", "max 1s must be at least the backoff 1m0s"},
		{"  work: {attempts: 3, backoff: 1s, jitter: 2}", "jitter 2 must be 0..1"},
		{"  other: {attempts: 3, backoff: 1s}", "test.yaml:6:3: retry policy for action \"other\", which no state or transition runs"},
		{"  work: {attempts: 3, backoff: soon}", "test.yaml:6:32: retry backoff \"soon\" is not a duration"},
		{"  work: {attempts: 3, backoff: 1s, tries: 2}", "test.yaml:6:36: unknown key \"tries\" in retry policy"},
	}
	for _, tt := range tests {
		_, err := Parse("test.yaml", []byte(base+tt.policy+"\n"))
		if err == nil || !errors.Is(err, stead.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.policy, err, tt.want)
		}
	}
	def, err := Parse("test.yaml", []byte(base+"  work: {attempts: 3, backoff: 1s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(def, NewRegistry()); err == nil || !strings.Contains(err.Error(), `retry policy for action "work", which is not registered`) {
		t.Fatalf("an unregistered retried action: %v", err)
	}
}

func TestRetryBuilderAndMermaid(t *testing.T) {
	t.Parallel()
	b := New("pay")
	b.Initial("charging")
	b.State("charging").Entry("charge").On("ok", "paid").Do("receipt")
	b.State("paid").Final(OutcomeSuccess)
	b.Retry("charge", Retry{Attempts: 4, Backoff: time.Second})
	b.Retry("receipt", Retry{Attempts: 2, Backoff: time.Second})
	def, err := b.Definition()
	if err != nil {
		t.Fatal(err)
	}
	if def.Retry["charge"].Pos.Line == 0 {
		t.Fatal("the builder did not record the retry's position")
	}
	m := def.Mermaid()
	for _, want := range []string{"note right of s0 : entry / charge (retry ×4)", "ok / receipt (retry ×2)"} {
		if !strings.Contains(m, want) {
			t.Errorf("diagram lacks %q:\n%s", want, m)
		}
	}
	b.Retry("charge", Retry{Attempts: 0, Backoff: time.Second})
	if _, err := b.Definition(); err == nil || !strings.Contains(err.Error(), "retry_test.go:") {
		t.Fatalf("a bad builder policy: %v, want an error at its call site", err)
	}
}

// A start whose entry action fails is retried too: the execution stays pending meanwhile.
func TestRetryOfTheStart(t *testing.T) {
	t.Parallel()
	src := `
initial: charging
states:
  charging:
    entry: [charge]
    on: {finish: paid}
  paid: {final: success}
retry:
  charge: {attempts: 2, backoff: 5s}
`
	var calls []string
	var log logger
	eng := mustEngine(t, src, &log, retryActions(&calls))
	s := newSim(t, eng)
	s.create("x", `{"fail_until":2}`)
	s.drain()
	if exe := s.exes["x"]; exe.Status != stead.StatusPending || kinds(exe.Deferred)[0] != KindStart {
		t.Fatalf("%s with %v deferred, want pending with the start kept", exe.Status, kinds(exe.Deferred))
	}
	s.advance(5 * time.Second)
	if exe := s.exes["x"]; exe.Status != stead.StatusRunning || exe.ActivePath != "charging" || len(exe.Deferred) != 0 {
		t.Fatalf("%s at %q, want running in charging", exe.Status, exe.ActivePath)
	}
}

// A deferred event whose delivery fails with attempts left is retried like any other: it heads
// Deferred, the events kept behind it wait, and all of them go through once it succeeds.
func TestRetryOfADeferredEvent(t *testing.T) {
	t.Parallel()
	src := `
initial: busy
states:
  busy:
    defer: [go, ping]
    on: {free: idle}
  idle:
    on:
      go: {target: charging, actions: [prepare]}
  charging:
    entry: [charge]
    on: {ping: {actions: [note]}}
retry:
  charge: {attempts: 3, backoff: 10s}
`
	var calls []string
	var log logger
	eng := mustEngine(t, src, &log, retryActions(&calls))
	s := newSim(t, eng)
	s.create("x", `{"fail_until":2}`)
	s.drain()
	s.send("x", "go", "")
	s.send("x", "ping", "")
	s.send("x", "free", "") // busy is left; idle takes go, whose charge fails: retried, ping waits
	exe := s.exes["x"]
	if exe.ActivePath != "idle" || !slices.Equal(kinds(exe.Deferred), []string{"go", "ping"}) {
		t.Fatalf("at %q with %v deferred, want idle (the free step stands) with [go ping] kept", exe.ActivePath, kinds(exe.Deferred))
	}
	if _, ok := exe.Timers[RetryTimerPath]; !ok {
		t.Fatal("no retry armed")
	}
	s.advance(10 * time.Second)
	exe = s.exes["x"]
	if exe.ActivePath != "charging" || len(exe.Deferred) != 0 {
		t.Fatalf("at %q with %v deferred, want charging with nothing kept", exe.ActivePath, kinds(exe.Deferred))
	}
	// go's attempts share their keys; ping's action ran once, after it.
	want := []string{"prepare#1@x:3:0", "charge#1@x:3:1", "prepare#2@x:3:0", "charge#2@x:3:1", "note#1@x:4:0"}
	if !slices.Equal(calls, want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
}
