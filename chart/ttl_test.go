package chart

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
)

const ttlChart = `
ttl: 1h
rearm_ttl: %s
initial: a
states:
  a:
    exit: [bye]
    timeout: {after: 2h, target: b}
    on: {go: b, poke: {actions: [note]}}
  b: {final: success}
`

func TestTTL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		rearm   string
		steps   []string // "+<duration>" advances the clock, anything else is an event
		status  stead.Status
		outcome string
		calls   []string
	}{
		{"expires", "false", []string{"+1h"}, stead.StatusDone, OutcomeExpired, []string{"bye"}},
		{"not yet", "false", []string{"+59m"}, stead.StatusRunning, "", nil},
		{"finishing first disarms it", "false", []string{"go", "+2h"}, stead.StatusDone, OutcomeSuccess, []string{"bye"}},
		{"activity does not push it back without rearm", "false", []string{"+40m", "poke", "+30m"}, stead.StatusDone, OutcomeExpired, []string{"note", "bye"}},
		{"activity pushes it back with rearm", "true", []string{"+40m", "poke", "+30m"}, stead.StatusRunning, "", []string{"note"}},
		{"and it expires an hour after the last event", "true", []string{"+40m", "poke", "+30m", "+30m"}, stead.StatusDone, OutcomeExpired, []string{"note", "bye"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var log logger
			eng := mustEngine(t, strings.Replace(ttlChart, "%s", tt.rearm, 1), &log, nil)
			s := newSim(t, eng)
			s.create("x", "")
			s.drain()
			for _, st := range tt.steps {
				if d, ok := strings.CutPrefix(st, "+"); ok {
					dur, _ := time.ParseDuration(d)
					s.advance(dur)
					continue
				}
				s.send("x", st, "")
			}
			exe := s.exes["x"]
			if exe.Status != tt.status || exe.Outcome != tt.outcome {
				t.Fatalf("%s/%q, want %s/%q", exe.Status, exe.Outcome, tt.status, tt.outcome)
			}
			if !slices.Equal(log.calls, tt.calls) {
				t.Fatalf("calls %v, want %v", log.calls, tt.calls)
			}
			if exe.Status.Finished() && len(s.timers) > 0 {
				t.Fatalf("timers left armed after the end: %v", s.timers)
			}
		})
	}
}

// An expiry ends a running child's parent like a cancel would: children cancelled, and it is
// not held behind a pending retry.
func TestTTLExpiresWhileRetrying(t *testing.T) {
	t.Parallel()
	var calls []string
	var log logger
	src := strings.Replace(retryChart, "retry:\n", "ttl: 20s\nretry:\n", 1)
	eng := mustEngine(t, strings.Replace(src, "%s", "", 1), &log, retryActions(&calls))
	s := newSim(t, eng)
	s.create("root", `{"fail_until":9}`)
	s.drain()
	s.send("root", "go", "")
	s.advance(10 * time.Second) // the first retry, which fails again
	s.advance(10 * time.Second) // the deadline, before the second retry
	exe := s.exes["root"]
	if exe.Status != stead.StatusDone || exe.Outcome != OutcomeExpired || len(exe.Deferred) != 0 {
		t.Fatalf("%s/%q deferred %v, want expired with nothing kept", exe.Status, exe.Outcome, kinds(exe.Deferred))
	}
	if len(s.timers) > 0 {
		t.Fatalf("timers left: %v", s.timers)
	}
}

func TestTTLStaleFireIgnored(t *testing.T) {
	t.Parallel()
	var log logger
	eng := mustEngine(t, strings.Replace(ttlChart, "%s", "true", 1), &log, nil)
	s := newSim(t, eng)
	s.create("x", "")
	s.drain()
	first := s.exes["x"].Timers[TTLTimerPath]
	s.advance(time.Minute)
	s.send("x", "poke", "")
	out, _, err := eng.Step(s.exes["x"], TimeoutEvent("x", TTLTimerPath, first), s.now)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != stead.StatusRunning {
		t.Fatalf("a fire of the first deadline ended it: %s/%q", out.Status, out.Outcome)
	}
}

func TestTTLValidationAndMermaid(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ src, want string }{
		{"ttl: soon\ninitial: a\nstates: {a: {}}\n", `test.yaml:1:6: ttl "soon" is not a duration`},
		{"rearm_ttl: true\ninitial: a\nstates: {a: {}}\n", "rearm_ttl needs a ttl"},
		{"ttl: -1h\ninitial: a\nstates: {a: {}}\n", "ttl -1h0m0s must be positive"},
	} {
		if _, err := Parse("test.yaml", []byte(tt.src)); err == nil || !errors.Is(err, stead.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.src, err, tt.want)
		}
	}
	b := New("t").TTL(time.Hour, true)
	b.Initial("a").State("a")
	def, err := b.Definition()
	if err != nil {
		t.Fatal(err)
	}
	if m := def.Mermaid(); !strings.Contains(m, "[*] --> s0 : ttl 1h0m0s, rearmed") {
		t.Fatalf("diagram lacks the ttl:\n%s", m)
	}
}
