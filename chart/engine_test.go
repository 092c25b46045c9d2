package chart

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
)

// logger records the actions an engine runs, in order.
type logger struct{ calls []string }

// testRegistry registers every action the definition names as a logging action, except those
// in extra, and the guards yes (true), no (false) and flag (context key "flag"); any other
// guard the definition names passes.
func testRegistry(def *Definition, log *logger, extra map[string]Action) *Registry {
	reg := NewRegistry()
	reg.Guard("yes", func(GuardContext) bool { return true })
	reg.Guard("no", func(GuardContext) bool { return false })
	reg.Guard("flag", func(g GuardContext) bool { return g.Bool("flag") })
	guard := func(t *Transition) {
		if t.Guard != "" && !reg.HasGuard(t.Guard) {
			reg.Guard(t.Guard, func(GuardContext) bool { return true })
		}
	}
	add := func(names []string) {
		for _, n := range names {
			if fn, ok := extra[n]; ok {
				reg.Action(n, fn)
				continue
			}
			name := n
			reg.Action(name, func(ActionContext) (ActionResult, error) {
				log.calls = append(log.calls, name)
				return ActionResult{}, nil
			})
		}
	}
	def.Walk(func(_ string, s *State) {
		add(s.Entry)
		add(s.Exit)
		for _, t := range s.On {
			add(t.Actions)
			guard(t)
		}
		for _, t := range s.Done {
			add(t.Actions)
			guard(t)
		}
		if s.Timeout != nil {
			add(s.Timeout.Actions)
			guard(&s.Timeout.Transition)
		}
		if s.OnError != nil {
			add(s.OnError.Actions)
			guard(s.OnError)
		}
		for _, t := range transientTransitions(s) {
			add(t.Actions)
			guard(t)
		}
		if sel := s.Select; sel != nil && sel.Action != "" {
			if fn, ok := extra[sel.Action]; ok {
				var labels []string
				for _, c := range sel.Cases {
					if c.Label != ElseLabel {
						labels = append(labels, c.Label)
					}
				}
				reg.Selector(sel.Action, labels, fn)
				return
			}
			// Without one of its own, a selector answers with the context's "label", declaring
			// the labels its cases name.
			var labels []string
			for _, c := range sel.Cases {
				if c.Label != ElseLabel {
					labels = append(labels, c.Label)
				}
			}
			name := sel.Action
			reg.Selector(name, labels, func(a ActionContext) (ActionResult, error) {
				log.calls = append(log.calls, name)
				return ActionResult{Label: a.String("label")}, nil
			})
		}
	})
	return reg
}

func mustEngine(t tb, src string, log *logger, extra map[string]Action, opts ...Option) *Engine {
	t.Helper()
	def, err := Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	// The engine's tests see an action's error at once, as a definition with "retry: none"
	// does; the default policy has tests of its own (TestDefaultRetry), and an option of the
	// test's own comes later and wins.
	opts = append([]Option{WithDefaultRetry(nil)}, opts...)
	eng, err := NewEngine(def, testRegistry(def, log, extra), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// run starts an execution and applies events (a kind, or "kind data" with JSON data), checking
// every intermediate result; it returns the last execution and bundle.
func run(t *testing.T, eng *Engine, events ...string) (*stead.Execution, stead.Bundle) {
	t.Helper()
	exe := &stead.Execution{ID: "x", DefinitionID: eng.id, Status: stead.StatusPending}
	var b stead.Bundle
	all := append([]string{KindStart}, events...)
	for i, spec := range all {
		kind, data, _ := strings.Cut(spec, " ")
		ev := stead.Event{ID: "e" + string(rune('a'+i)), Kind: kind}
		if data != "" {
			ev.Data = json.RawMessage(data)
		}
		out, bb, err := eng.Step(exe, ev, t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatalf("event %d (%s): %v", i, spec, err)
		}
		if err := eng.CheckExecution(out); err != nil {
			t.Fatalf("event %d (%s): %v", i, spec, err)
		}
		out.Version++
		exe, b = out, bb
	}
	return exe, b
}

const threeLevels = `
initial: a
states:
  a:
    initial: b
    entry: [en_a]
    exit: [ex_a]
    on:
      self_a: a
    states:
      b:
        initial: c
        entry: [en_b]
        exit: [ex_b]
        on:
          self_b: {target: b, actions: [t_self_b]}
          inner: {target: c2, internal: true, actions: [t_inner]}
          outer: {target: c2, actions: [t_outer]}
          note: {actions: [t_note]}
        states:
          c:
            entry: [en_c]
            exit: [ex_c]
            on:
              go: {target: z, actions: [t_go]}
              side: c2
              self_c: c
          c2:
            entry: [en_c2]
            exit: [ex_c2]
  z:
    initial: y
    entry: [en_z]
    exit: [ex_z]
    states:
      y:
        initial: x
        entry: [en_y]
        states:
          x:
            entry: [en_x]
            on: {back: a.b.c2}
`

func TestEntryExitOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		events   []string
		wantLog  []string
		wantPath string
	}{
		{"start enters three levels outside in", nil,
			[]string{"en_a", "en_b", "en_c"}, "a.b.c"},
		{"across the root exits three levels inside out, then enters", []string{"go"},
			[]string{"en_a", "en_b", "en_c", "ex_c", "ex_b", "ex_a", "t_go", "en_z", "en_y", "en_x"}, "z.y.x"},
		{"into a nested target enters every level down to it", []string{"go", "back"},
			[]string{"en_a", "en_b", "en_c", "ex_c", "ex_b", "ex_a", "t_go", "en_z", "en_y", "en_x", "ex_z", "en_a", "en_b", "en_c2"}, "a.b.c2"},
		{"between siblings only the siblings change", []string{"side"},
			[]string{"en_a", "en_b", "en_c", "ex_c", "en_c2"}, "a.b.c2"},
		{"self transition on a leaf exits and re-enters it", []string{"self_c"},
			[]string{"en_a", "en_b", "en_c", "ex_c", "en_c"}, "a.b.c"},
		{"self transition on a compound re-enters its initial child", []string{"side", "self_b"},
			[]string{"en_a", "en_b", "en_c", "ex_c", "en_c2", "ex_c2", "ex_b", "t_self_b", "en_b", "en_c"}, "a.b.c"},
		{"self transition from two levels up", []string{"self_a"},
			[]string{"en_a", "en_b", "en_c", "ex_c", "ex_b", "ex_a", "en_a", "en_b", "en_c"}, "a.b.c"},
		{"internal transition keeps the source active", []string{"inner"},
			[]string{"en_a", "en_b", "en_c", "ex_c", "t_inner", "en_c2"}, "a.b.c2"},
		{"external transition to a descendant leaves and re-enters the source", []string{"outer"},
			[]string{"en_a", "en_b", "en_c", "ex_c", "ex_b", "t_outer", "en_b", "en_c2"}, "a.b.c2"},
		{"targetless transition runs actions only", []string{"note"},
			[]string{"en_a", "en_b", "en_c", "t_note"}, "a.b.c"},
		{"unknown events are ignored", []string{"nothing"},
			[]string{"en_a", "en_b", "en_c"}, "a.b.c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var log logger
			eng := mustEngine(t, threeLevels, &log, nil)
			exe, _ := run(t, eng, tt.events...)
			if !reflect.DeepEqual(log.calls, tt.wantLog) {
				t.Errorf("actions\n got %v\nwant %v", log.calls, tt.wantLog)
			}
			if exe.ActivePath != tt.wantPath || exe.Status != stead.StatusRunning {
				t.Errorf("at %q (%s), want %q", exe.ActivePath, exe.Status, tt.wantPath)
			}
		})
	}
}

func TestIgnoredEventChangesOnlyUpdatedAt(t *testing.T) {
	t.Parallel()
	var log logger
	eng := mustEngine(t, threeLevels, &log, nil)
	exe, _ := run(t, eng)
	out, b, err := eng.Step(exe, stead.Event{ID: "zz", Kind: "nothing"}, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := *exe
	want.UpdatedAt = t0.Add(time.Hour)
	if !reflect.DeepEqual(*out, want) {
		t.Fatalf("got %+v\nwant %+v", out, want)
	}
	if !reflect.DeepEqual(b, stead.Bundle{ProcessedEventID: "zz"}) {
		t.Fatalf("bundle %+v", b)
	}
}

const historyChart = `
initial: h
states:
  h:
    initial: one
    history: %s
    on: {leave: away}
    states:
      one: {on: {next: two}}
      two:
        initial: deep1
        states:
          deep1: {on: {next: deep2}}
          deep2: {}
  away:
    on: {back: h}
`

func TestHistory(t *testing.T) {
	t.Parallel()
	tests := []struct {
		history string
		events  []string
		want    string
	}{
		{"true", []string{"next", "leave", "back"}, "h.two.deep1"},
		{"true", []string{"next", "next", "leave", "back"}, "h.two.deep1"}, // shallow: two's own child restarts
		{"true", []string{"leave", "back"}, "h.one"},
		{"false", []string{"next", "leave", "back"}, "h.one"},
		{"deep", []string{"next", "next", "leave", "back"}, "h.two.deep2"}, // deep: the leaf itself
		{"deep", []string{"next", "leave", "back"}, "h.two.deep1"},
		{"deep", []string{"leave", "back"}, "h.one"},
		{"deep", []string{"next", "next", "leave", "back", "leave", "back"}, "h.two.deep2"},
	}
	for _, tt := range tests {
		t.Run(tt.history+":"+strings.Join(tt.events, ","), func(t *testing.T) {
			t.Parallel()
			var log logger
			src := strings.Replace(historyChart, "%s", tt.history, 1)
			eng := mustEngine(t, src, &log, nil)
			exe, _ := run(t, eng, tt.events...)
			if exe.ActivePath != tt.want {
				t.Fatalf("history=%s: at %q, want %q (history %v)", tt.history, exe.ActivePath, tt.want, exe.History)
			}
		})
	}
}

func TestCompletionTransitions(t *testing.T) {
	t.Parallel()
	src := `
initial: job
states:
  job:
    initial: work
    states:
      work:
        on:
          ok: good
          bad: broken
          odd: weird
      good: {final: success}
      broken: {final: failure}
      weird: {final: strange}
    done:
      - {outcome: failure, target: retry, actions: [on_fail]}
      - {guard: flag, target: flagged}
      - {outcome: success, target: finished, actions: [on_ok]}
  retry: {}
  flagged: {}
  finished: {final: success}
`
	tests := []struct {
		event, start string
		wantPath     string
		wantStatus   stead.Status
		wantLog      []string
	}{
		{"ok", "", "finished", stead.StatusDone, []string{"on_ok"}},
		{"bad", "", "retry", stead.StatusRunning, []string{"on_fail"}},
		{"ok", `{"flag": true}`, "flagged", stead.StatusRunning, nil},
		{"odd", "", "job.weird", stead.StatusRunning, nil}, // no completion transition matches: stays
	}
	for _, tt := range tests {
		t.Run(tt.event+tt.start, func(t *testing.T) {
			t.Parallel()
			var log logger
			eng := mustEngine(t, src, &log, nil)
			exe := &stead.Execution{ID: "x", DefinitionID: eng.id, Status: stead.StatusPending}
			exe, _, err := eng.Step(exe, stead.Event{ID: "s", Kind: KindStart, Data: json.RawMessage(tt.start)}, t0)
			if err != nil {
				t.Fatal(err)
			}
			exe, _, err = eng.Step(exe, stead.Event{ID: "e", Kind: tt.event}, t0)
			if err != nil {
				t.Fatal(err)
			}
			if exe.ActivePath != tt.wantPath || exe.Status != tt.wantStatus || !reflect.DeepEqual(log.calls, tt.wantLog) {
				t.Fatalf("got %q %s %v, want %q %s %v", exe.ActivePath, exe.Status, log.calls, tt.wantPath, tt.wantStatus, tt.wantLog)
			}
			if exe.Status == stead.StatusDone && (exe.Outcome != "success" || !exe.FinishedAt.Equal(t0)) {
				t.Fatalf("done with outcome %q at %v", exe.Outcome, exe.FinishedAt)
			}
		})
	}
}

func TestFinishedExecutionIgnoresEvents(t *testing.T) {
	t.Parallel()
	var log logger
	eng := mustEngine(t, `{initial: a, states: {a: {on: {end: fin}}, fin: {final: good}}}`, &log, nil)
	exe, _ := run(t, eng, "end")
	if exe.Status != stead.StatusDone || exe.Outcome != "good" || exe.ActivePath != "fin" {
		t.Fatalf("%+v", exe)
	}
	for _, kind := range []string{"end", KindStart, KindTimeout, KindCancel} {
		out, b, err := eng.Step(exe, stead.Event{ID: "late", Kind: kind, Data: json.RawMessage(`{"path":"a"}`)}, t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != stead.StatusDone || out.ActivePath != "fin" || !b.StateOnly() {
			t.Fatalf("%s changed a finished execution: %+v %+v", kind, out, b)
		}
	}
}

func TestGuards(t *testing.T) {
	t.Parallel()
	src := `
initial: a
states:
  a:
    on:
      go:
        - {guard: no, target: never}
        - {guard: flag, target: flagged}
        - {target: fallback}
      maybe: {guard: no, target: never}
      up: {guard: flag, target: flagged}
    initial: a1
    states:
      a1:
        on:
          up: {guard: no, target: never}
  never: {}
  flagged: {}
  fallback: {}
`
	tests := []struct {
		start, event, want string
	}{
		{"", "go", "fallback"},
		{`{"flag": true}`, "go", "flagged"},
		{"", "maybe", "a.a1"},               // every guard fails: ignored
		{`{"flag": true}`, "up", "flagged"}, // the leaf's guard fails, the ancestor's passes
		{`{"flag": false}`, "up", "a.a1"},   // nobody takes it
		{`{"flag": "yes"}`, "up", "a.a1"},   // a non-boolean flag is false
		{`{"other": 1}`, "nothing", "a.a1"}, // unknown event
		{`{"flag": true}`, "maybe", "a.a1"}, // guard no stays false
	}
	for _, tt := range tests {
		t.Run(tt.event+tt.start, func(t *testing.T) {
			t.Parallel()
			var log logger
			eng := mustEngine(t, src, &log, nil)
			exe := &stead.Execution{ID: "x", DefinitionID: eng.id, Status: stead.StatusPending}
			exe, _, _ = eng.Step(exe, stead.Event{ID: "s", Kind: KindStart, Data: json.RawMessage(tt.start)}, t0)
			exe, _, err := eng.Step(exe, stead.Event{ID: "e", Kind: tt.event}, t0)
			if err != nil {
				t.Fatal(err)
			}
			if exe.ActivePath != tt.want {
				t.Fatalf("at %q, want %q", exe.ActivePath, tt.want)
			}
		})
	}
}

func TestErrorTransitions(t *testing.T) {
	t.Parallel()
	boom := func(ActionContext) (ActionResult, error) { return ActionResult{}, errors.New("boom") }
	panics := func(ActionContext) (ActionResult, error) { panic("kaput") }
	src := `
initial: a
states:
  a:
    initial: a1
    on_error: {target: recovered, actions: [on_err]}
    states:
      a1:
        on:
          fail_entry: a2
          fail_action: {target: a1, actions: [boom]}
          fail_panic: {actions: [panics]}
          fail_out: outside
      a2:
        entry: [boom]
  outside:
    entry: [boom]
  recovered:
    on: {again: doomed}
  doomed:
    entry: [boom]
    on_error: {target: worse, actions: [boom]}
  worse: {}
`
	tests := []struct {
		events     []string
		wantStatus stead.Status
		wantPath   string
		wantErr    string
		wantLog    []string
	}{
		{[]string{"fail_entry"}, stead.StatusRunning, "recovered", "", []string{"on_err"}},
		{[]string{"fail_action"}, stead.StatusRunning, "recovered", "", []string{"on_err"}},
		{[]string{"fail_panic"}, stead.StatusRunning, "recovered", "", []string{"on_err"}},
		{[]string{"fail_out"}, stead.StatusFailed, "outside", `action "boom": boom`, nil},
		{[]string{"fail_entry", "again"}, stead.StatusFailed, "doomed",
			`action "boom": boom (while recovering from action "boom": boom)`, []string{"on_err"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.events, ","), func(t *testing.T) {
			t.Parallel()
			var log logger
			eng := mustEngine(t, src, &log, map[string]Action{"boom": boom, "panics": panics})
			exe, _ := run(t, eng, tt.events...)
			if exe.Status != tt.wantStatus || exe.ActivePath != tt.wantPath || exe.Error != tt.wantErr {
				t.Fatalf("got %s at %q error %q, want %s at %q error %q", exe.Status, exe.ActivePath, exe.Error,
					tt.wantStatus, tt.wantPath, tt.wantErr)
			}
			if !reflect.DeepEqual(log.calls, tt.wantLog) {
				t.Fatalf("log %v, want %v", log.calls, tt.wantLog)
			}
			if exe.Status == stead.StatusFailed && exe.FinishedAt.IsZero() {
				t.Fatal("failed without FinishedAt")
			}
		})
	}
}

func TestErrorTransitionSeesTheError(t *testing.T) {
	t.Parallel()
	var seen stead.Event
	extra := map[string]Action{
		"boom": func(ActionContext) (ActionResult, error) { return ActionResult{}, errors.New("no stock") },
		"note": func(c ActionContext) (ActionResult, error) { seen = c.Event; return ActionResult{}, nil },
	}
	var log logger
	eng := mustEngine(t, `{initial: a, states: {a: {entry: [boom], on_error: {target: b, actions: [note]}}, b: {}}}`, &log, extra)
	exe, _ := run(t, eng)
	if exe.ActivePath != "b" || seen.Kind != KindError {
		t.Fatalf("at %q, saw %+v", exe.ActivePath, seen)
	}
	var d map[string]string
	if err := json.Unmarshal(seen.Data, &d); err != nil || d["error"] != "no stock" || d["state"] != "a" || d["action"] != "boom" {
		t.Fatalf("error event data %s", seen.Data)
	}
}

const timerChart = `
initial: wait
states:
  wait:
    timeout: {after: 30s, target: late, actions: [t_late]}
    on:
      answer: answered
      poke: wait
      inside: {target: wait.w2, internal: true}
    initial: w1
    states:
      w1:
        timeout: {after: 5s, target: w2}
      w2: {}
  answered: {}
  late: {}
`

func TestTimers(t *testing.T) {
	t.Parallel()
	sched := func(path string, at time.Duration) stead.TimerOp {
		return stead.TimerOp{Action: stead.TimerSchedule, Path: path, FireAt: t0.Add(at)}
	}
	cancel := func(path string) stead.TimerOp { return stead.TimerOp{Action: stead.TimerCancel, Path: path} }
	tests := []struct {
		name       string
		events     []string
		wantPath   string
		wantTimers []stead.TimerOp // of the last step
	}{
		{"entry arms every timed state outside in", nil, "wait.w1",
			[]stead.TimerOp{sched("wait", 30*time.Second), sched("wait.w1", 5*time.Second)}},
		{"exit disarms inside out", []string{"answer"}, "answered",
			[]stead.TimerOp{cancel("wait.w1"), cancel("wait")}},
		{"a self transition re-arms", []string{"poke"}, "wait.w1",
			[]stead.TimerOp{cancel("wait.w1"), cancel("wait"), sched("wait", 31*time.Second), sched("wait.w1", 6*time.Second)}},
		{"an internal transition keeps the outer timer", []string{"inside"}, "wait.w2",
			[]stead.TimerOp{cancel("wait.w1")}},
		{"the inner timeout fires", []string{KindTimeout + ` {"path":"wait.w1"}`}, "wait.w2",
			[]stead.TimerOp{cancel("wait.w1")}},
		{"the outer timeout fires from a nested state", []string{KindTimeout + ` {"path":"wait"}`}, "late",
			[]stead.TimerOp{cancel("wait.w1"), cancel("wait")}},
		{"a timer cancelled by an earlier event is ignored when it fires late",
			[]string{"answer", KindTimeout + ` {"path":"wait"}`}, "answered", nil},
		{"a timeout for an inactive sibling is ignored",
			[]string{"inside", KindTimeout + ` {"path":"wait.w1"}`}, "wait.w2", nil},
		{"a timeout for an unknown path is ignored", []string{KindTimeout + ` {"path":"nope"}`}, "wait.w1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var log logger
			eng := mustEngine(t, timerChart, &log, nil)
			exe, b := run(t, eng, tt.events...)
			if exe.ActivePath != tt.wantPath {
				t.Fatalf("at %q, want %q", exe.ActivePath, tt.wantPath)
			}
			if !reflect.DeepEqual(b.Timers, tt.wantTimers) {
				t.Fatalf("timers\n got %+v\nwant %+v", b.Timers, tt.wantTimers)
			}
		})
	}
}

func TestTimeoutEventID(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 1, 0, 0, 0, 1500, time.UTC)
	ev := TimeoutEvent("exe-1", "a.b", at)
	if ev.ID != "timeout:exe-1:a.b:1767225600000001" || ev.Kind != KindTimeout || string(ev.Data) != `{"path":"a.b","fire_at":"2026-01-01T00:00:00.0000015Z"}` {
		t.Fatalf("%+v %s", ev, ev.Data)
	}
	if TimeoutEvent("exe-1", "a.b", at).ID != ev.ID {
		t.Fatal("timeout ids are not stable")
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	var log logger
	eng := mustEngine(t, timerChart, &log, nil)
	exe, b := run(t, eng, KindCancel)
	if exe.Status != stead.StatusCancelled || exe.FinishedAt.IsZero() || exe.ActivePath != "wait.w1" {
		t.Fatalf("%+v", exe)
	}
	want := []stead.TimerOp{{Action: stead.TimerCancel, Path: "wait.w1"}, {Action: stead.TimerCancel, Path: "wait"}}
	if !reflect.DeepEqual(b.Timers, want) || len(b.Emits) != 0 {
		t.Fatalf("bundle %+v", b)
	}
	// A pending execution can be cancelled before it starts.
	p := &stead.Execution{ID: "p", DefinitionID: eng.id, Status: stead.StatusPending}
	out, b, err := eng.Step(p, stead.Event{ID: "c", Kind: KindCancel}, t0)
	if err != nil || out.Status != stead.StatusCancelled || !b.StateOnly() {
		t.Fatalf("%v %+v %+v", err, out, b)
	}
}

func TestActionResults(t *testing.T) {
	t.Parallel()
	var keys []string
	extra := map[string]Action{
		"count": func(c ActionContext) (ActionResult, error) {
			keys = append(keys, c.Key())
			return ActionResult{
				Set:    map[string]any{"n": c.Float("n") + 1, "who": c.ExecutionID},
				Delete: []string{"tmp"},
				Send:   []Message{{Kind: "ping", Data: map[string]int{"n": int(c.Float("n")) + 1}}, {To: "other", Kind: "pong"}},
			}, nil
		},
		"bad_send": func(c ActionContext) (ActionResult, error) {
			return ActionResult{Set: map[string]any{"never": true}, Send: []Message{{Kind: "x", Data: func() {}}}}, nil
		},
	}
	var log logger
	eng := mustEngine(t, `{initial: a, states: {a: {entry: [count], on: {go: {target: a, actions: [count]}, bad: {actions: [bad_send]}}}}}`, &log, extra)
	exe := &stead.Execution{ID: "x", DefinitionID: eng.id, Status: stead.StatusPending, Version: 0}
	exe, b, err := eng.Step(exe, stead.Event{ID: "s", Kind: KindStart, Data: json.RawMessage(`{"tmp": 1, "n": 41}`)}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if string(exe.Context) != `{"n":42,"who":"x"}` {
		t.Fatalf("context %s", exe.Context)
	}
	wantEmits := []stead.Emit{
		{Target: "x", Event: stead.Event{ID: "x:0:0:0", Kind: "ping", Data: json.RawMessage(`{"n":42}`), CreatedAt: t0}},
		{Target: "other", Event: stead.Event{ID: "x:0:0:1", Kind: "pong", CreatedAt: t0}},
	}
	if !reflect.DeepEqual(b.Emits, wantEmits) {
		t.Fatalf("emits\n got %+v\nwant %+v", b.Emits, wantEmits)
	}
	exe.Version = 7
	exe, _, err = eng.Step(exe, stead.Event{ID: "g", Kind: "go"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(keys, []string{"x:0:0", "x:7:0", "x:7:1"}) || string(exe.Context) != `{"n":44,"who":"x"}` {
		t.Fatalf("keys %v context %s", keys, exe.Context)
	}
	out, _, err := eng.Step(exe, stead.Event{ID: "b", Kind: "bad"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != stead.StatusFailed || !strings.Contains(out.Error, "send 0") || string(out.Context) != string(exe.Context) {
		t.Fatalf("an unencodable send must fail the action and change nothing: %+v", out)
	}
}

func TestStepRefusesBadInput(t *testing.T) {
	t.Parallel()
	var log logger
	eng := mustEngine(t, threeLevels, &log, nil)
	running, _ := run(t, eng)
	mod := func(f func(e *stead.Execution)) *stead.Execution { c := running.Clone(); f(c); return c }
	tests := []struct {
		name string
		exe  *stead.Execution
		ev   stead.Event
	}{
		{"nil execution", nil, stead.Event{ID: "e", Kind: "go"}},
		{"other definition", mod(func(e *stead.Execution) { e.DefinitionID = "other" }), stead.Event{ID: "e", Kind: "go"}},
		{"unknown active path", mod(func(e *stead.Execution) { e.ActivePath = "a.nope" }), stead.Event{ID: "e", Kind: "go"}},
		{"compound active path", mod(func(e *stead.Execution) { e.ActivePath = "a.b" }), stead.Event{ID: "e", Kind: "go"}},
		{"running without path", mod(func(e *stead.Execution) { e.ActivePath = "" }), stead.Event{ID: "e", Kind: "go"}},
		{"root path not a region", mod(func(e *stead.Execution) { e.RootPath = "a" }), stead.Event{ID: "e", Kind: "go"}},
		{"context not an object", &stead.Execution{ID: "p", DefinitionID: eng.id, Status: stead.StatusPending, Context: json.RawMessage(`[1]`)},
			stead.Event{ID: "e", Kind: KindStart, Data: json.RawMessage(`{"a":1}`)}},
		{"empty kind", running, stead.Event{ID: "e"}},
		{"bad timeout data", running, stead.Event{ID: "e", Kind: KindTimeout, Data: json.RawMessage(`"a"`)}},
		{"suspended", mod(func(e *stead.Execution) { e.Status = stead.StatusSuspended }), stead.Event{ID: "e", Kind: "go"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := eng.Step(tt.exe, tt.ev, t0)
			if !errors.Is(err, stead.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
		})
	}
	// Start data that is not an object.
	p := &stead.Execution{ID: "p", DefinitionID: eng.id, Status: stead.StatusPending}
	if _, _, err := eng.Step(p, stead.Event{ID: "s", Kind: KindStart, Data: json.RawMessage(`[1]`)}, t0); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("start with array data: %v", err)
	}
}

func TestTrace(t *testing.T) {
	t.Parallel()
	src := `{initial: a, states: {a: {exit: [bye], on: {go: {target: b, actions: [hop]}}}, b: {entry: [hi]}}}`
	for _, tt := range []struct {
		name string
		src  string
		opts []Option
		want bool
	}{
		{"off", src, nil, false},
		{"engine option", src, []Option{WithTrace()}, true},
		{"definition flag", "{trace: true, " + src[1:], nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var log logger
			eng := mustEngine(t, tt.src, &log, nil, tt.opts...)
			exe, b := run(t, eng, "go")
			if (b.Trace != nil) != tt.want {
				t.Fatalf("trace %+v", b.Trace)
			}
			if !tt.want {
				return
			}
			want := stead.TraceStep{EventID: "eb", EventKind: "go", From: "a", To: "b",
				Actions: []string{"bye", "hop", "hi"}, Context: json.RawMessage("{}"), At: t0.Add(time.Second)}
			if !reflect.DeepEqual(*b.Trace, want) || exe.ActivePath != "b" {
				t.Fatalf("trace\n got %+v\nwant %+v", *b.Trace, want)
			}
		})
	}
}

func TestCompletionLoopFails(t *testing.T) {
	t.Parallel()
	var log logger
	eng := mustEngine(t, `{initial: a, states: {a: {initial: f, states: {f: {final: success}}, done: a}}}`, &log, nil)
	exe, _ := run(t, eng)
	if exe.Status != stead.StatusFailed || !strings.Contains(exe.Error, "more than 100 completion or error transitions") {
		t.Fatalf("%s %q", exe.Status, exe.Error)
	}
}

func TestTimeoutOfAnEarlierArmingIsIgnored(t *testing.T) {
	t.Parallel()
	var log logger
	eng := mustEngine(t, timerChart, &log, nil)
	step := func(exe *stead.Execution, ev stead.Event, at time.Time) *stead.Execution {
		t.Helper()
		out, _, err := eng.Step(exe, ev, at)
		if err != nil {
			t.Fatal(err)
		}
		if err := eng.CheckExecution(out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	exe := step(&stead.Execution{ID: "x", DefinitionID: eng.id, Status: stead.StatusPending}, stead.Event{ID: "s", Kind: KindStart}, t0)
	first := exe.Timers["wait"]
	if !first.Equal(t0.Add(30 * time.Second)) {
		t.Fatalf("armed %v", exe.Timers)
	}
	// The first timer fires and its event is queued; before it is handled, "poke" leaves and
	// re-enters the state, arming it again.
	stale := TimeoutEvent("x", "wait", first)
	exe = step(exe, stead.Event{ID: "p", Kind: "poke"}, t0.Add(31*time.Second))
	second := exe.Timers["wait"]
	if !second.Equal(t0.Add(61 * time.Second)) {
		t.Fatalf("re-armed %v", exe.Timers)
	}
	exe = step(exe, stale, t0.Add(31*time.Second))
	if exe.ActivePath != "wait.w1" || !exe.Timers["wait"].Equal(second) {
		t.Fatalf("the stale timeout fired the new arming: %q %v", exe.ActivePath, exe.Timers)
	}
	// The current one fires; a duplicate of it (a second sweeper) changes nothing more.
	fire := TimeoutEvent("x", "wait", second)
	exe = step(exe, fire, t0.Add(61*time.Second))
	if exe.ActivePath != "late" || len(exe.Timers) != 0 {
		t.Fatalf("at %q, timers %v", exe.ActivePath, exe.Timers)
	}
	// A fire time a store rounded to the microsecond still matches.
	exe = step(&stead.Execution{ID: "y", DefinitionID: eng.id, Status: stead.StatusPending}, stead.Event{ID: "s", Kind: KindStart}, t0.Add(1234567*time.Nanosecond))
	got := exe.Timers["wait"]
	if got.Nanosecond()%1000 != 0 {
		t.Fatalf("fire time %v not in microseconds", got)
	}
	exe = step(exe, TimeoutEvent("y", "wait", got.Add(300*time.Nanosecond)), got)
	if exe.ActivePath != "late" {
		t.Fatalf("a rounded fire time was refused: %q", exe.ActivePath)
	}
}

// ActionContext.Set and its typed forms change the context exactly as ActionResult.Set would,
// before it and Delete, only when the action succeeds, and the next action sees them.
func TestActionContextSet(t *testing.T) {
	t.Parallel()
	negZero := math.Copysign(0, -1)
	tests := []struct {
		name string
		acts map[string]Action
		want string // the context after the step, or "failed: <error part>"
	}{
		{"typed sets encode as encoding/json", map[string]Action{"one": func(c ActionContext) (ActionResult, error) {
			c.SetFloat("f", 2.5)
			c.SetFloat("n", c.Float("n")+1)
			c.SetFloat("z", negZero)
			c.SetFloat("big", 1e21)
			c.SetFloat("whole", 1<<53)
			c.SetInt("i", -3)
			c.SetBool("b", true)
			c.SetString("s", "plain")
			c.SetString("e", "é\"<")
			c.Set("l", []int{1, 2})
			return ActionResult{}, nil
		}}, mustMarshal(t, map[string]any{"f": 2.5, "n": 42, "z": negZero, "big": 1e21, "whole": 1 << 53, "i": -3,
			"b": true, "s": "plain", "e": "é\"<", "l": []int{1, 2}, "tmp": 1})},
		{"result Set after, Delete last", map[string]Action{"one": func(c ActionContext) (ActionResult, error) {
			c.SetInt("k", 1)
			c.SetInt("j", 1)
			c.SetInt("j", 2)
			c.SetInt("tmp", 5)
			return ActionResult{Set: map[string]any{"k": 2}, Delete: []string{"tmp"}}, nil
		}}, `{"j":2,"k":2,"n":41}`},
		{"the next action sees the change", map[string]Action{
			"one": func(c ActionContext) (ActionResult, error) { c.SetInt("n", 5); return ActionResult{}, nil },
			"two": func(c ActionContext) (ActionResult, error) {
				c.SetFloat("seen", c.Float("n"))
				return ActionResult{}, nil
			},
		}, `{"n":5,"seen":5,"tmp":1}`},
		{"a failing action changes nothing", map[string]Action{"one": func(c ActionContext) (ActionResult, error) {
			c.SetInt("n", 0)
			return ActionResult{}, errors.New("boom")
		}}, "failed: boom"},
		{"a value that does not encode fails the action", map[string]Action{"one": func(c ActionContext) (ActionResult, error) {
			c.SetInt("n", 0)
			c.Set("bad", func() {})
			return ActionResult{}, nil
		}}, `failed: context key "bad"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			acts := tt.acts
			if acts["two"] == nil {
				acts["two"] = func(ActionContext) (ActionResult, error) { return ActionResult{}, nil }
			}
			var log logger
			eng := mustEngine(t, `{initial: a, states: {a: {on: {go: {target: a, actions: [one, two]}}}}}`, &log, acts)
			exe := &stead.Execution{ID: "x", DefinitionID: eng.id, Status: stead.StatusPending}
			exe, _, err := eng.Step(exe, stead.Event{ID: "s", Kind: KindStart, Data: json.RawMessage(`{"tmp": 1, "n": 41}`)}, t0)
			if err != nil {
				t.Fatal(err)
			}
			out, _, err := eng.Step(exe, stead.Event{ID: "g", Kind: "go"}, t0)
			if err != nil {
				t.Fatal(err)
			}
			if failed, ok := strings.CutPrefix(tt.want, "failed: "); ok {
				if out.Status != stead.StatusFailed || !strings.Contains(out.Error, failed) || string(out.Context) != string(exe.Context) {
					t.Fatalf("status %s error %q context %s, want failed with %q and context %s", out.Status, out.Error, out.Context, failed, exe.Context)
				}
				return
			}
			if out.Status != stead.StatusRunning || string(out.Context) != tt.want {
				t.Fatalf("status %s (%s) context %s, want %s", out.Status, out.Error, out.Context, tt.want)
			}
		})
	}
}

// A typed set is checked against the definition's context declaration like ActionResult.Set.
func TestActionContextSetSchema(t *testing.T) {
	t.Parallel()
	var log logger
	eng := mustEngine(t, typedChart, &log, map[string]Action{"act": func(c ActionContext) (ActionResult, error) {
		c.SetString("count", "many")
		return ActionResult{}, nil
	}})
	ctx, err := eng.PrepareContext(json.RawMessage(`{"order_id":"o"}`))
	if err != nil {
		t.Fatal(err)
	}
	exe := &stead.Execution{ID: "x", DefinitionID: eng.id, Status: stead.StatusPending, Context: ctx}
	if exe, _, err = eng.Step(exe, stead.Event{ID: "s", Kind: KindStart}, t0); err != nil {
		t.Fatal(err)
	}
	out, _, err := eng.Step(exe, stead.Event{ID: "g", Kind: "go"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if out.ActivePath != "broken" || string(out.Context) != string(exe.Context) {
		t.Fatalf("path %s context %s, want broken with %s", out.ActivePath, out.Context, exe.Context)
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
