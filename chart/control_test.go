package chart

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
)

// control applies a control command to exe as Engine.Control and checks the result is an
// execution the engine could have produced.
func control(t *testing.T, eng *Engine, exe *stead.Execution, kind, data string) (*stead.Execution, stead.Bundle) {
	t.Helper()
	out, b, err := eng.Control(exe, cmdEvent(kind, data), t0.Add(time.Hour))
	if err != nil {
		t.Fatalf("%s %s: %v", kind, data, err)
	}
	if err := eng.CheckExecution(out); err != nil {
		t.Fatalf("%s %s: %v", kind, data, err)
	}
	if b.ProcessedEventID != "cmd-1" {
		t.Fatalf("%s: processed marker %q, want the command's id", kind, b.ProcessedEventID)
	}
	out.Version++
	return out, b
}

func cmdEvent(kind, data string) stead.Event {
	ev := stead.Event{ID: "cmd-1", Kind: kind}
	if data != "" {
		ev.Data = json.RawMessage(data)
	}
	return ev
}

func TestSetState(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		events   []string // after start
		state    string
		wantLog  []string // the actions the command runs
		wantPath string
	}{
		{"a sibling leaves and enters only the siblings", nil, "a.b.c2", []string{"ex_c", "en_c2"}, "a.b.c2"},
		{"the active leaf is left and entered again", nil, "a.b.c", []string{"ex_c", "en_c"}, "a.b.c"},
		{"an ancestor is left and entered again down to its initial leaf", nil, "a",
			[]string{"ex_c", "ex_b", "ex_a", "en_a", "en_b", "en_c"}, "a.b.c"},
		{"across the top every level is left and entered", nil, "z",
			[]string{"ex_c", "ex_b", "ex_a", "en_z", "en_y", "en_x"}, "z.y.x"},
		{"a nested target enters every level down to it", []string{"go"}, "a.b.c2",
			[]string{"ex_x", "ex_z", "en_a", "en_b", "en_c2"}, "a.b.c2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var log logger
			eng := mustEngine(t, threeLevels, &log, nil)
			exe, _ := run(t, eng, tt.events...)
			log.calls = nil
			out, b := control(t, eng, exe, KindSetState, `{"state":"`+tt.state+`"}`)
			// ex_x is not declared: leaving x runs nothing.
			want := slices.DeleteFunc(slices.Clone(tt.wantLog), func(s string) bool { return s == "ex_x" })
			if out.ActivePath != tt.wantPath || out.Status != stead.StatusRunning || !reflect.DeepEqual(log.calls, want) {
				t.Fatalf("at %q (%s), ran %v; want %q, %v", out.ActivePath, out.Status, log.calls, tt.wantPath, want)
			}
			if !b.StateOnly() && len(b.Timers) == 0 && len(b.Emits) == 0 && b.Trace == nil {
				t.Fatalf("bundle %+v", b)
			}
		})
	}
}

func TestSetStateTimersAndRegions(t *testing.T) {
	t.Parallel()
	var log logger
	eng := mustEngine(t, timerChart, &log, nil)
	exe, _ := run(t, eng)
	now := t0.Add(time.Hour)
	out, b := control(t, eng, exe, KindSetState, `{"state":"wait.w2"}`)
	if want := []stead.TimerOp{{Action: stead.TimerCancel, Path: "wait.w1"}}; !reflect.DeepEqual(b.Timers, want) {
		t.Fatalf("timers %+v, want %+v", b.Timers, want)
	}
	if _, armed := out.Timers["wait.w1"]; armed || out.Timers["wait"].IsZero() {
		t.Fatalf("armed timers %v: want wait's alone", out.Timers)
	}
	_, b = control(t, eng, out, KindSetState, `{"state":"wait.w1"}`)
	if want := (stead.TimerOp{Action: stead.TimerSchedule, Path: "wait.w1", FireAt: now.Add(5 * time.Second)}); len(b.Timers) != 1 || b.Timers[0] != want {
		t.Fatalf("timers %+v, want %+v", b.Timers, want)
	}

	eng = mustEngine(t, parallelChart, &log, nil)
	exe, _ = run(t, eng, "go")
	out, b = control(t, eng, exe, KindSetState, `{"state":"idle"}`)
	wantEmits := []stead.Emit{
		{Target: "x:work.left:0", Event: stead.Event{ID: "cmd-1", Kind: KindCancelRequest, CreatedAt: now}},
		{Target: "x:work.right:0", Event: stead.Event{ID: "cmd-1", Kind: KindCancelRequest, CreatedAt: now}},
	}
	if out.ActivePath != "idle" || !reflect.DeepEqual(b.Emits, wantEmits) || out.InvokeSeq["work"] != 1 {
		t.Fatalf("at %q, emits %+v, invoke seq %v: want idle, a cancel request per region, seq 1", out.ActivePath, b.Emits, out.InvokeSeq)
	}
	out, b = control(t, eng, out, KindSetState, `{"state":"work"}`)
	if len(b.Spawns) != 2 || b.Spawns[0].ChildID != "x:work.left:1" {
		t.Fatalf("spawns %+v: want fresh region children", b.Spawns)
	}
	if _, _, err := eng.Control(out, cmdEvent(KindSetState, `{"state":"work.left.l1"}`), now); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("set-state into a region of the parent: %v, want ErrInvalid", err)
	}
	// A region child moves inside its region only.
	child := &stead.Execution{ID: "x:work.left:1", DefinitionID: eng.id, Status: stead.StatusPending, RootPath: "work.left", ParentID: "x", ChildID: "x:work.left:1"}
	child, _, err := eng.Step(child, stead.Event{ID: "s", Kind: KindStart}, t0)
	if err != nil {
		t.Fatal(err)
	}
	moved, b := control(t, eng, child, KindSetState, `{"state":"work.left.l_done"}`)
	if moved.Status != stead.StatusDone || moved.Outcome != OutcomeSuccess || len(b.Emits) != 1 || b.Emits[0].Event.Kind != KindFinished {
		t.Fatalf("region child moved to its final state: %s/%s, emits %+v", moved.Status, moved.Outcome, b.Emits)
	}
	for _, state := range []string{"work.right.r1", "idle", "work.left"} {
		if _, _, err := eng.Control(child, cmdEvent(KindSetState, `{"state":"`+state+`"}`), now); !errors.Is(err, stead.ErrInvalid) {
			t.Fatalf("region child to %q: %v, want ErrInvalid", state, err)
		}
	}
}

func TestSetStateRefuses(t *testing.T) {
	t.Parallel()
	var log logger
	eng := mustEngine(t, threeLevels, &log, nil)
	running, _ := run(t, eng)
	status := func(s stead.Status) *stead.Execution {
		e := running.Clone()
		e.Status = s
		return e
	}
	pending := &stead.Execution{ID: "x", DefinitionID: eng.id, Status: stead.StatusPending}
	for _, c := range []struct {
		name   string
		exe    *stead.Execution
		data   string
		status bool // a *stead.StatusError rather than bad data
	}{
		{"unknown state", running, `{"state":"a.nope"}`, false},
		{"no state", running, `{}`, false},
		{"not JSON", running, `nope`, false},
		{"done", status(stead.StatusDone), `{"state":"z"}`, true},
		{"cancelled", status(stead.StatusCancelled), `{"state":"z"}`, true},
		{"cancelling", status(stead.StatusCancelling), `{"state":"z"}`, true},
		{"pending", pending, `{"state":"z"}`, true},
	} {
		log.calls = nil
		_, _, err := eng.Control(c.exe, cmdEvent(KindSetState, c.data), t0)
		var se *stead.StatusError
		if !errors.Is(err, stead.ErrInvalid) || errors.As(err, &se) != c.status {
			t.Fatalf("%s: %v, want ErrInvalid (a status error: %v)", c.name, err, c.status)
		}
		if len(log.calls) != 0 {
			t.Fatalf("%s: ran %v", c.name, log.calls)
		}
	}
	if _, _, err := eng.Control(running, cmdEvent("go", ""), t0); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("Control of a plain event: %v, want ErrInvalid", err)
	}
	other := running.Clone()
	other.DefinitionID = "else"
	if _, _, err := eng.Control(other, cmdEvent(KindReset, ""), t0); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("Control of another definition's execution: %v, want ErrInvalid", err)
	}
}

// TestControlKeepsSuspension checks that reset and set-state move a suspended execution without
// resuming it.
func TestControlKeepsSuspension(t *testing.T) {
	t.Parallel()
	var log logger
	eng := mustEngine(t, threeLevels, &log, nil)
	exe, _ := run(t, eng)
	exe.Status = stead.StatusSuspended
	for _, c := range []struct{ kind, data, path string }{
		{KindSetState, `{"state":"z"}`, "z.y.x"},
		{KindReset, ``, "a.b.c"},
	} {
		out, _ := control(t, eng, exe, c.kind, c.data)
		if out.Status != stead.StatusSuspended || out.ActivePath != c.path {
			t.Fatalf("%s: %s at %q, want suspended at %q", c.kind, out.Status, out.ActivePath, c.path)
		}
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	extra := map[string]Action{
		"t_go": func(ActionContext) (ActionResult, error) {
			return ActionResult{Set: map[string]any{"went": true}}, nil
		},
	}
	var log logger
	eng := mustEngine(t, threeLevels, &log, extra)
	exe := &stead.Execution{ID: "x", DefinitionID: eng.id, Status: stead.StatusPending, Context: json.RawMessage(`{"order":7}`)}
	exe, _, err := eng.Step(exe, stead.Event{ID: "s", Kind: KindStart, Data: json.RawMessage(`{"amount":3}`)}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(exe.StartContext); got != `{"amount":3,"order":7}` {
		t.Fatalf("start context %s, want the created context merged with the start data", got)
	}
	exe, _, err = eng.Step(exe, stead.Event{ID: "g", Kind: "go"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	log.calls = nil
	out, b := control(t, eng, exe, KindReset, ``)
	if out.ActivePath != "a.b.c" || string(out.Context) != `{"amount":3,"order":7}` || len(out.History) != 0 {
		t.Fatalf("reset to %q with %s, history %v", out.ActivePath, out.Context, out.History)
	}
	if want := []string{"en_a", "en_b", "en_c"}; !reflect.DeepEqual(log.calls, want) {
		t.Fatalf("reset ran %v, want the entries alone %v (a restart runs no exit)", log.calls, want)
	}
	if b.Trace != nil && b.Trace.EventKind != KindReset {
		t.Fatalf("trace %+v", b.Trace)
	}
	out, _ = control(t, eng, out, KindReset, `{"context":{"fresh":1}}`)
	if string(out.Context) != `{"fresh":1}` || string(out.StartContext) != `{"fresh":1}` {
		t.Fatalf("reset with a context: context %s, start context %s", out.Context, out.StartContext)
	}
	for _, data := range []string{`{"context":[1]}`, `{"context":"x"}`, `[]`} {
		if _, _, err := eng.Control(out, cmdEvent(KindReset, data), t0); !errors.Is(err, stead.ErrInvalid) {
			t.Fatalf("reset with %s: %v, want ErrInvalid", data, err)
		}
	}
}

func TestResetDisarmsAndCancels(t *testing.T) {
	t.Parallel()
	var log logger
	eng := mustEngine(t, timerChart, &log, nil)
	exe, _ := run(t, eng)
	now := t0.Add(time.Hour)
	_, b := control(t, eng, exe, KindReset, ``)
	want := []stead.TimerOp{
		{Action: stead.TimerCancel, Path: "wait"}, {Action: stead.TimerCancel, Path: "wait.w1"},
		{Action: stead.TimerSchedule, Path: "wait", FireAt: now.Add(30 * time.Second)},
		{Action: stead.TimerSchedule, Path: "wait.w1", FireAt: now.Add(5 * time.Second)},
	}
	if !reflect.DeepEqual(b.Timers, want) {
		t.Fatalf("timers\n got %+v\nwant %+v", b.Timers, want)
	}

	eng = mustEngine(t, parallelChart, &log, nil)
	exe, _ = run(t, eng, "go")
	out, b := control(t, eng, exe, KindReset, ``)
	if out.ActivePath != "idle" || len(out.Children) != 0 || out.InvokeSeq["work"] != 1 || len(b.Emits) != 2 ||
		b.Emits[0].Event.Kind != KindCancelRequest || b.Emits[1].Target != "x:work.right:0" {
		t.Fatalf("reset of a parallel parent: at %q, children %v, seq %v, emits %+v", out.ActivePath, out.Children, out.InvokeSeq, b.Emits)
	}
}

// TestRetry fails a step on purpose, then retries it: the dead letter holds the event and the
// state before it, the retry applies the event again from there, once the cause is gone.
func TestRetry(t *testing.T) {
	t.Parallel()
	broken := true
	extra := map[string]Action{
		"charge": func(c ActionContext) (ActionResult, error) {
			if broken {
				return ActionResult{Set: map[string]any{"half": true}}, errors.New("card processor down")
			}
			return ActionResult{Set: map[string]any{"charged": c.Float("amount")}}, nil
		},
	}
	var log logger
	eng := mustEngine(t, `
initial: cart
states:
  cart:
    timeout: {after: 10s, target: expired}
    on: {pay: paying}
  paying:
    entry: [charge]
    on: {ship: shipped}
  expired: {final: expired}
  shipped: {final: success}
`, &log, extra)
	exe := &stead.Execution{ID: "o", DefinitionID: eng.id, Status: stead.StatusPending}
	exe, _, err := eng.Step(exe, stead.Event{ID: "s", Kind: KindStart, Data: json.RawMessage(`{"amount":5}`)}, t0)
	if err != nil {
		t.Fatal(err)
	}
	armed := exe.Timers["cart"]
	pay := stead.Event{ID: "pay-1", Kind: "pay", Data: json.RawMessage(`{"card":"x"}`), CreatedAt: t0}
	failed, b, err := eng.Step(exe, pay, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	dl := failed.DeadLetter
	if failed.Status != stead.StatusFailed || dl == nil || dl.Event.ID != "pay-1" || dl.Status != stead.StatusRunning ||
		dl.ActivePath != "cart" || string(dl.Context) != `{"amount":5}` || !dl.Timers["cart"].Equal(armed) {
		t.Fatalf("failed %s at %q with dead letter %+v", failed.Status, failed.ActivePath, dl)
	}
	if len(b.Timers) != 1 || b.Timers[0].Action != stead.TimerCancel {
		t.Fatalf("the failure disarmed %+v", b.Timers)
	}
	// Still broken: the retry runs the step again and fails again, with a new dead letter.
	again, _ := control(t, eng, failed, KindRetry, ``)
	if again.Status != stead.StatusFailed || again.DeadLetter == nil || again.DeadLetter.Event.ID != "pay-1" || again.DeadLetter.ActivePath != "cart" {
		t.Fatalf("retry while broken: %s, dead letter %+v", again.Status, again.DeadLetter)
	}
	broken = false
	done, b := control(t, eng, again, KindRetry, ``)
	if done.Status != stead.StatusRunning || done.ActivePath != "paying" || done.DeadLetter != nil || done.Error != "" ||
		!done.FinishedAt.IsZero() || !strings.Contains(string(done.Context), `"charged":5`) || strings.Contains(string(done.Context), "half") {
		t.Fatalf("retried: %s at %q, error %q, context %s, dead letter %+v", done.Status, done.ActivePath, done.Error, done.Context, done.DeadLetter)
	}
	// The cart's timer was armed again at its time, then the step left the cart and disarmed it.
	if want := []stead.TimerOp{{Action: stead.TimerSchedule, Path: "cart", FireAt: armed}, {Action: stead.TimerCancel, Path: "cart"}}; !reflect.DeepEqual(b.Timers, want) {
		t.Fatalf("timers %+v, want %+v", b.Timers, want)
	}
	if _, _, err := eng.Control(done, cmdEvent(KindRetry, ""), t0); !errors.As(err, new(*stead.StatusError)) {
		t.Fatalf("retry of a running execution: %v, want a status error", err)
	}
	noLetter := again.Clone()
	noLetter.DeadLetter = nil
	child := again.Clone()
	child.ParentID = "p"
	for name, e := range map[string]*stead.Execution{"no dead letter": noLetter, "a child": child} {
		if _, _, err := eng.Control(e, cmdEvent(KindRetry, ""), t0); !errors.Is(err, stead.ErrInvalid) {
			t.Fatalf("retry of %s: %v, want ErrInvalid", name, err)
		}
	}
}

// TestRetryOfATimeout retries a failure that a timer caused: the timeout is applied again though
// its timer fired long ago, and is not armed a second time.
func TestRetryOfATimeout(t *testing.T) {
	t.Parallel()
	broken := true
	extra := map[string]Action{"give_up": func(ActionContext) (ActionResult, error) {
		if broken {
			return ActionResult{}, errors.New("mailer down")
		}
		return ActionResult{}, nil
	}}
	var log logger
	eng := mustEngine(t, `{initial: wait, states: {wait: {timeout: {after: 5s, target: gone}}, gone: {entry: [give_up], on: {x: wait}}}}`, &log, extra)
	exe, _ := run(t, eng)
	fire := exe.Timers["wait"]
	failed, _, err := eng.Step(exe, TimeoutEvent("x", "wait", fire), fire)
	if err != nil || failed.Status != stead.StatusFailed {
		t.Fatalf("timeout: %v, %s", err, failed.Status)
	}
	broken = false
	out, b := control(t, eng, failed, KindRetry, ``)
	if out.Status != stead.StatusRunning || out.ActivePath != "gone" {
		t.Fatalf("retry of a timeout: %s at %q", out.Status, out.ActivePath)
	}
	for _, op := range b.Timers {
		if op.Action == stead.TimerSchedule {
			t.Fatalf("the fired timer was armed again: %+v", b.Timers)
		}
	}
}

// TestRetryOfAFailedStart retries an execution whose very start failed: it is pending again and
// takes its start event anew.
func TestRetryOfAFailedStart(t *testing.T) {
	t.Parallel()
	broken := true
	extra := map[string]Action{"boot": func(ActionContext) (ActionResult, error) {
		if broken {
			return ActionResult{}, errors.New("no disk")
		}
		return ActionResult{Set: map[string]any{"booted": true}}, nil
	}}
	var log logger
	eng := mustEngine(t, `{initial: on, states: {on: {entry: [boot]}}}`, &log, extra)
	exe := &stead.Execution{ID: "x", DefinitionID: eng.id, Status: stead.StatusPending, Context: json.RawMessage(`{"n":1}`)}
	failed, _, err := eng.Step(exe, stead.Event{ID: "s", Kind: KindStart}, t0)
	if err != nil || failed.Status != stead.StatusFailed || failed.DeadLetter.Status != stead.StatusPending {
		t.Fatalf("start: %v, %+v", err, failed)
	}
	broken = false
	out, _ := control(t, eng, failed, KindRetry, ``)
	if out.Status != stead.StatusRunning || out.ActivePath != "on" || string(out.Context) != `{"booted":true,"n":1}` {
		t.Fatalf("retried start: %s at %q with %s", out.Status, out.ActivePath, out.Context)
	}
}

// TestSetStateFromFailed moves a failed execution on: no exit runs (its states were left when it
// failed), the target is entered from the top, and the failure is cleared.
func TestSetStateFromFailed(t *testing.T) {
	t.Parallel()
	extra := map[string]Action{"en_c2": func(ActionContext) (ActionResult, error) { return ActionResult{}, errors.New("boom") }}
	var log logger
	eng := mustEngine(t, threeLevels, &log, extra)
	exe, _ := run(t, eng, "side")
	if exe.Status != stead.StatusFailed {
		t.Fatalf("%s, want failed", exe.Status)
	}
	log.calls = nil
	out, _ := control(t, eng, exe, KindSetState, `{"state":"a.b.c"}`)
	if want := []string{"en_a", "en_b", "en_c"}; !reflect.DeepEqual(log.calls, want) || out.Status != stead.StatusRunning ||
		out.Error != "" || out.DeadLetter != nil || !out.FinishedAt.IsZero() {
		t.Fatalf("ran %v, %s error %q dead letter %+v; want %v and running", log.calls, out.Status, out.Error, out.DeadLetter, want)
	}
}

// TestCancelRunsExitActions checks that a cancel leaves the active states as a transition would,
// innermost first, and that a failing exit action is recorded without stopping the cancel.
func TestCancelRunsExitActions(t *testing.T) {
	t.Parallel()
	var log logger
	eng := mustEngine(t, threeLevels, &log, map[string]Action{
		"ex_b": func(ActionContext) (ActionResult, error) {
			log.calls = append(log.calls, "ex_b!")
			return ActionResult{}, errors.New("lock already gone")
		},
	})
	exe, _ := run(t, eng)
	for _, from := range []stead.Status{stead.StatusRunning, stead.StatusCancelling} {
		log.calls = nil
		e := exe.Clone()
		e.Status = from
		out, _, err := eng.Step(e, stead.Event{ID: "c", Kind: KindCancel}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"ex_c", "ex_b!", "ex_a"}; !reflect.DeepEqual(log.calls, want) {
			t.Fatalf("from %s ran %v, want %v", from, log.calls, want)
		}
		if out.Status != stead.StatusCancelled || !strings.Contains(out.Error, "lock already gone") || out.ActivePath != "a.b.c" {
			t.Fatalf("from %s: %s at %q, error %q", from, out.Status, out.ActivePath, out.Error)
		}
	}
}
