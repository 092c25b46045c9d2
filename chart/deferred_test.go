package chart

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/steadhq/stead"
)

const deferChart = `
initial: busy
states:
  busy:
    defer: [refund, note, a, b]
    initial: working
    on:
      next: idle
    states:
      working:
        on:
          note: {actions: [inner_note]}
          step: waiting
      waiting: {}
  idle:
    defer: [a]
    on:
      refund: {actions: [refund]}
      note: {actions: [note]}
      b: {target: ready, actions: [b]}
  ready:
    on:
      a: {target: end, actions: [a]}
  end: {final: success}
`

func TestDeferredEvents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		events   []string
		path     string
		deferred []string
		calls    []string
	}{
		{"kept while deferred", []string{"refund"}, "busy.working", []string{"refund"}, nil},
		{"an inner transition wins over an outer defer", []string{"refund", "note"}, "busy.working",
			[]string{"refund"}, []string{"inner_note"}},
		{"entering a state that still defers keeps them", []string{"refund", "step", "note"}, "busy.waiting",
			[]string{"refund", "note"}, nil},
		{"delivered in order once a state that does not defer them is entered",
			[]string{"refund", "step", "note", "refund", "next"}, "idle", nil, []string{"refund", "note", "refund"}},
		{"a delivery that enters states gives the ones kept before it another chance",
			[]string{"a", "b", "next"}, "end", nil, []string{"b", "a"}},
		{"deferred by another state on delivery", []string{"a", "refund", "next"}, "idle", []string{"a"}, []string{"refund"}},
		{"deferred by each state in turn", []string{"refund", "next", "a", "b"}, "end", nil, []string{"refund", "b", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var log logger
			eng := mustEngine(t, deferChart, &log, nil)
			exe, _ := run(t, eng, tt.events...)
			if exe.ActivePath != tt.path {
				t.Fatalf("active path %q, want %q", exe.ActivePath, tt.path)
			}
			if got := kinds(exe.Deferred); !slices.Equal(got, tt.deferred) {
				t.Fatalf("deferred %v, want %v", got, tt.deferred)
			}
			if !slices.Equal(log.calls, tt.calls) {
				t.Fatalf("calls %v, want %v", log.calls, tt.calls)
			}
		})
	}
}

// A delivery of kept events happens inside the step that entered the state: one trace step,
// one bundle, actions keyed on from the step's own.
func TestDeferredDeliveredInTheEnteringStep(t *testing.T) {
	t.Parallel()
	var keys []string
	record := func(name string) Action {
		return func(a ActionContext) (ActionResult, error) {
			keys = append(keys, name+"@"+a.Key()+":"+a.Event.ID)
			return ActionResult{Send: []Message{{Kind: "done_" + name}}}, nil
		}
	}
	var log logger
	eng := mustEngine(t, deferChart, &log, map[string]Action{"refund": record("refund"), "note": record("note")}, WithTrace())
	exe, b := run(t, eng, "refund", "step", "note", "next")
	if exe.ActivePath != "idle" || len(exe.Deferred) != 0 {
		t.Fatalf("at %q with %v deferred", exe.ActivePath, kinds(exe.Deferred))
	}
	if want := []string{"refund@x:4:0:eb", "note@x:4:1:ed"}; !slices.Equal(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	if len(b.Emits) != 2 || b.Emits[0].Event.Kind != "done_refund" || b.Emits[1].Event.Kind != "done_note" {
		t.Fatalf("emits %+v", b.Emits)
	}
	if b.ProcessedEventID != "ee" || b.Trace == nil || b.Trace.From != "busy.waiting" || b.Trace.To != "idle" ||
		!slices.Equal(b.Trace.Actions, []string{"refund", "note"}) {
		t.Fatalf("bundle %q trace %+v", b.ProcessedEventID, b.Trace)
	}
}

func TestDeferredBound(t *testing.T) {
	t.Parallel()
	var log logger
	eng := mustEngine(t, deferChart, &log, nil)
	exe, _ := run(t, eng)
	full := exe.Clone()
	for i := range MaxDeferred {
		full.Deferred = append(full.Deferred, stead.Event{ID: fmt.Sprint(i), Kind: "refund"})
	}
	out, _, err := eng.Step(full, stead.Event{ID: "over", Kind: "refund"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != stead.StatusFailed || !strings.Contains(out.Error, "deferred beyond") {
		t.Fatalf("%s %q, want failed for too many deferred events", out.Status, out.Error)
	}
	if err := eng.CheckExecution(out); err != nil {
		t.Fatal(err)
	}
}

func TestDeferValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want string
	}{
		{"initial: a\nstates:\n  a: {defer: [stead.timeout]}\n", "test.yaml:3:3: state \"a\": defer: event kind \"stead.timeout\" is reserved"},
		{"initial: a\nstates:\n  a: {defer: [x, x]}\n", "defer: event kind \"x\" is listed twice"},
		{"initial: a\nstates:\n  a:\n    defer: x\n    on: {x: b}\n  b: {}\n", "test.yaml:5:13: state \"a\": defer: the state both defers and takes \"x\""},
		{"initial: a\nstates:\n  a: {on: {go: b}}\n  b: {final: success, defer: x}\n", "a final state defers nothing"},
	}
	for _, tt := range tests {
		_, err := Parse("test.yaml", []byte(tt.src))
		if err == nil || !errors.Is(err, stead.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want an error containing %q", tt.src, err, tt.want)
		}
	}
}

func TestDeferBuilderAndMermaid(t *testing.T) {
	t.Parallel()
	b := New("door")
	b.Initial("locked")
	b.State("locked").Defer("open").On("unlock", "closed")
	b.State("closed").On("open", "opened")
	b.State("opened")
	def, err := b.Definition()
	if err != nil {
		t.Fatal(err)
	}
	if m := def.Mermaid(); !strings.Contains(m, "note right of s0 : defer open") {
		t.Fatalf("diagram lacks the deferral note:\n%s", m)
	}
	var log logger
	eng, err := NewEngine(def, testRegistry(def, &log, nil))
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := run(t, eng, "open", "unlock")
	if exe.ActivePath != "opened" {
		t.Fatalf("the deferred open was not delivered after unlock: at %q", exe.ActivePath)
	}
}
