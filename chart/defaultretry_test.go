package chart

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
)

// defaultRetryChart runs "charge", which always fails, on "go"; %s is the definition's retry
// block, if any, and the on_error line of charging.
const defaultRetryChart = `
initial: idle
states:
  idle: {on: {go: charging, refuse: declined}}
  charging:
    entry: [charge]
    %s
  declined: {final: failure}
%s
`

// TestDefaultRetry checks which policy an action without one of its own gets: DefaultRetry()
// unless the definition ("retry: none", "retry: {charge: none}", "retry: {default: ...}") or the
// engine (WithDefaultRetry) says otherwise, the definition winning over the engine.
func TestDefaultRetry(t *testing.T) {
	t.Parallel()
	def := DefaultRetry()
	tests := []struct {
		name    string
		onError string
		retry   string
		opts    []Option
		delays  []time.Duration // the backoff before each further attempt, jitter included up to
		jitter  float64
		status  stead.Status
		errHas  string
	}{
		{name: "the default: five attempts over about 15 s", delays: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second},
			jitter: def.Jitter, status: stead.StatusFailed, errHas: "(retries exhausted: 5 attempts)"},
		{name: "retry: none", retry: "retry: none", status: stead.StatusFailed},
		{name: "the action's none", retry: "retry: {charge: none}", status: stead.StatusFailed},
		{name: "the definition's default", retry: "retry: {default: {attempts: 2, backoff: 3s}}",
			delays: []time.Duration{3 * time.Second}, status: stead.StatusFailed, errHas: "(retries exhausted: 2 attempts)"},
		{name: "the engine's default", opts: []Option{WithDefaultRetry(&Retry{Attempts: 3, Backoff: time.Minute})},
			delays: []time.Duration{time.Minute, 2 * time.Minute}, status: stead.StatusFailed, errHas: "3 attempts"},
		{name: "the definition's none beats the engine's", retry: "retry: none",
			opts: []Option{WithDefaultRetry(&Retry{Attempts: 3, Backoff: time.Minute})}, status: stead.StatusFailed},
		{name: "the engine's none", opts: []Option{WithDefaultRetry(nil)}, status: stead.StatusFailed},
		{name: "the error transition after the last attempt", onError: "on_error: declined",
			retry: "retry: {default: {attempts: 2, backoff: 3s}}", delays: []time.Duration{3 * time.Second}, status: stead.StatusDone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := Parse("test.yaml", []byte(strings.ReplaceAll(
				strings.Replace(strings.Replace(defaultRetryChart, "%s", tt.onError, 1), "%s", tt.retry, 1), "\t", "  ")))
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			var log logger
			reg := testRegistry(d, &log, map[string]Action{"charge": func(ActionContext) (ActionResult, error) {
				calls++
				return ActionResult{}, errors.New("503 Service Unavailable")
			}})
			eng, err := NewEngine(d, reg, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			s := newSim(t, eng)
			s.create("x", "")
			s.drain()
			s.send("x", "go", "")
			for i, delay := range tt.delays {
				exe := s.exes["x"]
				at, ok := exe.Timers[RetryTimerPath]
				if !ok || exe.Status != stead.StatusRunning {
					t.Fatalf("after attempt %d: %s with timers %v, want a retry pending", i+1, exe.Status, exe.Timers)
				}
				earliest := s.now.Add(delay - time.Duration(float64(delay)*tt.jitter))
				if at.After(s.now.Add(delay)) || at.Before(earliest) {
					t.Fatalf("attempt %d: retry at +%v, want +%v less at most %g of it", i+2, at.Sub(s.now), delay, tt.jitter)
				}
				s.advance(at.Sub(s.now))
			}
			exe := s.exes["x"]
			if exe.Status != tt.status || calls != len(tt.delays)+1 {
				t.Fatalf("ended %s after %d calls, want %s after %d", exe.Status, calls, tt.status, len(tt.delays)+1)
			}
			if tt.status == stead.StatusFailed && (!strings.Contains(exe.Error, "503") || !strings.Contains(exe.Error, tt.errHas)) {
				t.Fatalf("error %q, want the action's with %q", exe.Error, tt.errHas)
			}
			if tt.errHas == "" && strings.Contains(exe.Error, "exhausted") {
				t.Fatalf("error %q speaks of retries that never ran", exe.Error)
			}
		})
	}
}

// TestDefaultRetryRefused refuses an engine default out of range.
func TestDefaultRetryRefused(t *testing.T) {
	t.Parallel()
	d, err := Parse("test.yaml", []byte("initial: a\nstates:\n  a: {final: ok}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Retry{{Attempts: 0}, {Attempts: 3}, {Attempts: 3, Backoff: time.Second, Jitter: 2}} {
		if _, err := NewEngine(d, nil, WithDefaultRetry(r)); !errors.Is(err, stead.ErrInvalid) {
			t.Errorf("WithDefaultRetry(%+v): %v, want ErrInvalid", *r, err)
		}
	}
	b := New("built").Initial("a").DefaultRetry(*NoRetry())
	b.State("a").Final("ok")
	built, err := b.Definition()
	if err != nil || built.DefaultRetry == nil || built.DefaultRetry.Attempts != 1 {
		t.Fatalf("Builder.DefaultRetry: %+v, %v", built, err)
	}
}
