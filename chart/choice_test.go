package chart

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/steadhq/stead"
)

const choiceChart = `
initial: idle
states:
  idle:
    on:
      order: route
      check: classify
  route:
    choice:
      - {guard: big, target: review, actions: [flag_big]}
      - {guard: flag, target: fast}
      - {target: normal, actions: [plain]}
  classify:
    entry: [prep]
    select:
      action: classifier
      cases:
        ok: {target: normal, actions: [accept]}
        risky: review
        else: idle
  review: {on: {back: idle}}
  fast: {on: {back: idle}}
  normal: {on: {back: idle}}
`

func choiceEngine(t tb, src string, log *logger) *Engine {
	t.Helper()
	def, err := Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	reg := testRegistry(def, log, nil)
	reg.Guard("big", func(g GuardContext) bool { return g.Float("amount") > 100 })
	eng, err := NewEngine(def, reg)
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

func TestChoiceAndSelect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		start string
		event string
		path  string
		calls []string
	}{
		{"first passing guard", `{"amount":500,"flag":true}`, "order", "review", []string{"flag_big"}},
		{"second branch", `{"amount":5,"flag":true}`, "order", "fast", nil},
		{"else", `{"amount":5}`, "order", "normal", []string{"plain"}},
		{"selector case with actions", `{"label":"ok"}`, "check", "normal", []string{"prep", "classifier", "accept"}},
		{"selector case", `{"label":"risky"}`, "check", "review", []string{"prep", "classifier"}},
		{"selector else", `{"label":"odd"}`, "check", "idle", []string{"prep", "classifier"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var log logger
			eng := choiceEngine(t, choiceChart, &log)
			s := newSim(t, eng)
			s.create("root", tt.start)
			s.drain()
			s.send("root", tt.event, "")
			exe := s.exes["root"]
			if exe.Status != stead.StatusRunning || exe.ActivePath != tt.path {
				t.Fatalf("%s at %q, want running at %q (%s)", exe.Status, exe.ActivePath, tt.path, exe.Error)
			}
			if !slices.Equal(log.calls, tt.calls) {
				t.Fatalf("calls %v, want %v", log.calls, tt.calls)
			}
		})
	}
}

// A label no case takes (and no else) is an error of the selector's action: it takes the error
// transition, or fails the execution.
func TestSelectUnknownLabel(t *testing.T) {
	t.Parallel()
	src := `
initial: pick
states:
  pick:
    select: {action: classifier, cases: {ok: done}}
    on_error: broken
  done: {final: success}
  broken: {final: failure}
`
	var log logger
	eng := mustEngine(t, src, &log, map[string]Action{"classifier": func(ActionContext) (ActionResult, error) {
		return ActionResult{Label: "nope"}, nil
	}})
	exe, _ := run(t, eng)
	if exe.Status != stead.StatusDone || exe.Outcome != OutcomeFailure {
		t.Fatalf("%s %q, want done with failure", exe.Status, exe.Outcome)
	}
	if exe.ActivePath != "broken" {
		t.Fatalf("at %q, want broken", exe.ActivePath)
	}
}

// Choice points that lead to one another without end fail the execution like a completion loop.
func TestChoiceLoopFails(t *testing.T) {
	t.Parallel()
	src := `
initial: a
states:
  a: {choice: [{target: b}]}
  b: {choice: [{target: a}]}
`
	var log logger
	exe, _ := run(t, mustEngine(t, src, &log, nil))
	if exe.Status != stead.StatusFailed || !strings.Contains(exe.Error, "more than") {
		t.Fatalf("%s %q, want a failure for the loop", exe.Status, exe.Error)
	}
}

func TestChoiceAndSelectValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want string
	}{
		{"initial: a\nstates:\n  a:\n    choice: [{target: b, guard: g}]\n  b: {}\n", "test.yaml:4:14: state \"a\": choice: the last branch is the else and takes no guard"},
		{"initial: a\nstates:\n  a:\n    choice: [{target: b}, {target: b}]\n  b: {}\n", "choice: branch 1 has no guard"},
		{"initial: a\nstates:\n  a:\n    choice: [{guard: g}, {target: b}]\n  b: {}\n", "choice: branch 1 needs a target"},
		{"initial: a\nstates:\n  a:\n    choice: [{target: b}]\n    on: {x: b}\n  b: {}\n", "a choice point is left as soon as it is entered"},
		{"initial: a\nstates:\n  a:\n    choice: [{target: b}]\n    entry: [x]\n  b: {}\n", "a choice point runs no entry or exit actions"},
		{"initial: a\nstates:\n  a:\n    choice: b\n  b: {}\n", "test.yaml:4:13: choice: expected a list of branches"},
		{"initial: a\nstates:\n  a:\n    select: {cases: {ok: b}}\n  b: {}\n", "test.yaml:4:13: state \"a\": select needs an action"},
		{"initial: a\nstates:\n  a:\n    select: {action: s}\n  b: {}\n", "select needs at least one case"},
		{"initial: a\nstates:\n  a:\n    select: {action: s, cases: {ok: b}}\n    choice: [{target: b}]\n  b: {}\n", "a choice point or a selector, not both"},
		{"initial: a\nstates:\n  a:\n    select: {action: s, cases: {ok: {actions: [x]}}}\n  b: {}\n", "select: case \"ok\" needs a target"},
		{"initial: a\nstates:\n  a:\n    select: {action: s, cases: {ok: b}, labels: [x]}\n  b: {}\n", "unknown key \"labels\" in select"},
	}
	for _, tt := range tests {
		_, err := Parse("test.yaml", []byte(tt.src))
		if err == nil || !errors.Is(err, stead.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want an error containing %q", tt.src, err, tt.want)
		}
	}
}

// The label set a selector declares is checked against its states' cases at load time.
func TestSelectLabelsValidated(t *testing.T) {
	t.Parallel()
	def, err := Parse("test.yaml", []byte(`
initial: a
states:
  a:
    select:
      action: s
      cases:
        ok: b
        maybe: b
  b: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	fn := func(ActionContext) (ActionResult, error) { return ActionResult{}, nil }
	tests := []struct {
		reg  *Registry
		want []string
	}{
		{NewRegistry().Action("s", fn), []string{`test.yaml:6:7: state "a": select: action "s" is not registered as a selector`}},
		{NewRegistry().Selector("s", []string{"ok", "no"}, fn), []string{
			`test.yaml:9:16: state "a": select: selector "s" never returns "maybe" (it declares ok, no)`,
			`test.yaml:6:7: state "a": select: no case for label "no" of selector "s"`}},
	}
	for _, tt := range tests {
		err := Validate(def, tt.reg)
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v, want an error containing %q", err, w)
			}
		}
	}
	if err := Validate(def, NewRegistry().Selector("s", []string{"ok", "maybe"}, fn)); err != nil {
		t.Fatalf("cases that cover the labels: %v", err)
	}
}

func TestChoiceSelectBuilderAndMermaid(t *testing.T) {
	t.Parallel()
	b := New("flow")
	b.Initial("route")
	r := b.State("route")
	r.Choice("big", "review").Do("flag_big")
	r.Choice("", "check")
	c := b.State("check").Entry("prep").Select("classifier")
	c.Case("ok", "done")
	c.Case(ElseLabel, "review")
	b.State("review").On("back", "route")
	b.State("done").Final(OutcomeSuccess)
	def, err := b.Definition()
	if err != nil {
		t.Fatal(err)
	}
	m := def.Mermaid()
	for _, want := range []string{"state s0 <<choice>>", "s0 --> s2 : choice [big] / flag_big", "s0 --> s1 : else",
		"s1 --> s3 : classifier = ok", "s1 --> s2 : classifier = else"} {
		if !strings.Contains(m, want) {
			t.Errorf("diagram lacks %q:\n%s", want, m)
		}
	}
	var log logger
	reg := testRegistry(def, &log, nil)
	reg.Guard("big", func(g GuardContext) bool { return g.Float("amount") > 100 })
	eng, err := NewEngine(def, reg)
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := run(t, eng)
	if exe.ActivePath != "review" || !slices.Equal(log.calls, []string{"prep", "classifier"}) {
		t.Fatalf("at %q after %v, want review after prep and classifier", exe.ActivePath, log.calls)
	}
}

// Deep history re-enters the whole chain to the remembered leaf, entry actions outermost first.
func TestDeepHistoryEntersTheChain(t *testing.T) {
	t.Parallel()
	src := `
initial: h
states:
  h:
    history: deep
    initial: one
    entry: [en_h]
    on: {leave: away}
    states:
      one: {on: {next: two}}
      two:
        initial: x
        entry: [en_two]
        states:
          x: {entry: [en_x], on: {next: y}}
          y: {entry: [en_y]}
  away: {on: {back: h}}
`
	var log logger
	eng := mustEngine(t, src, &log, nil)
	exe, _ := run(t, eng, "next", "next", "leave")
	log.calls = nil
	exe, _, err := eng.Step(exe, stead.Event{ID: "z", Kind: "back"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if exe.ActivePath != "h.two.y" || !slices.Equal(log.calls, []string{"en_h", "en_two", "en_y"}) {
		t.Fatalf("at %q after %v, want h.two.y after en_h, en_two, en_y", exe.ActivePath, log.calls)
	}
	if err := eng.CheckExecution(exe); err != nil {
		t.Fatal(err)
	}
	def, _ := Parse("test.yaml", []byte(src))
	if m := def.Mermaid(); !strings.Contains(m, `state "h (H*)" as s0`) {
		t.Fatalf("diagram lacks the deep history mark:\n%s", m)
	}
	if _, err := Parse("t.yaml", []byte("initial: a\nstates:\n  a: {history: deep}\n")); err == nil || !strings.Contains(err.Error(), "history needs a compound state") {
		t.Fatalf("deep history on an atomic state: %v", err)
	}
	b := New("d")
	b.Initial("a")
	a := b.State("a").Initial("b").History().DeepHistory()
	a.State("b")
	if _, err := b.Definition(); err == nil || !strings.Contains(err.Error(), "shallow or deep history, not both") {
		t.Fatalf("both histories: %v", err)
	}
}
