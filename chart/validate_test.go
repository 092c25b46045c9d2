package chart

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
)

func TestValidateRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want string // "line:col: message fragment"
	}{
		{"unknown target", `
initial: a
states:
  a:
    on: {go: nowhere}
`, `5:14: state "a": on go: unknown target "nowhere"`},
		{"duplicate state name in a file", `
initial: a
states:
  a: {}
  a: {}
`, `5:3: duplicate key "a" (first at line 4)`},
		{"missing initial state", `
states:
  a: {}
`, `2:1: missing initial state`},
		{"missing initial child", `
initial: a
states:
  a:
    states: {b: {}}
`, `4:3: state "a": missing initial state`},
		{"initial not a child", `
initial: a
states:
  a:
    initial: zz
    states: {b: {}}
`, `state "a": initial state "zz" is not a child`},
		{"unreachable state", `
initial: a
states:
  a: {on: {go: b}}
  b: {}
  lost: {on: {go: a}}
`, `6:3: state "lost": unreachable`},
		{"unreachable child", `
initial: a
states:
  a:
    initial: a1
    states:
      a1: {}
      a2: {}
`, `8:7: state "a.a2": unreachable`},
		{"transition out of a final state", `
initial: a
states:
  a: {final: success, on: {go: a}}
`, `4:3: state "a": transitions out of a final state are not allowed`},
		{"timeout out of a final state", `
initial: a
states:
  a: {final: success, timeout: {after: 1s, target: a}}
`, `transitions out of a final state are not allowed`},
		{"non-positive timer", `
initial: a
states:
  a: {timeout: {after: 0s, target: b}}
  b: {}
`, `4:16: state "a": timeout duration 0s must be positive`},
		{"negative timer", `
initial: a
states:
  a: {timeout: {after: -5m, target: b}}
  b: {}
`, `timeout duration -5m0s must be positive`},
		{"bad duration", `
initial: a
states:
  a: {timeout: {after: soon, target: b}}
  b: {}
`, `4:24: timeout after "soon" is not a duration`},
		{"bad name", `
initial: "a b"
states:
  "a b": {}
`, `state name "a b" is not an identifier`},
		{"reserved event kind", `
initial: a
states:
  a: {on: {stead.cancel: a}}
`, `event kind "stead.cancel" is reserved`},
		{"target inside a region from outside", `
initial: a
states:
  a: {on: {go: p.r.r1}}
  p:
    parallel: true
    regions: {r: {initial: r1, states: {r1: {}}}}
    done: a
`, `target "p.r.r1" is inside region "p.r"`},
		{"target outside the region from inside", `
initial: p
states:
  a: {}
  p:
    parallel: true
    regions: {r: {initial: r1, states: {r1: {on: {out: a}}}}}
    done: a
`, `target "a" is outside region "p.r"`},
		{"region root as target", `
initial: p
states:
  p:
    parallel: true
    regions: {r: {initial: r1, states: {r1: {on: {again: r}}}}}
    done: p
`, `target "p.r" is a region's root state`},
		{"parallel without catch-all completion", `
initial: p
states:
  p:
    parallel: true
    regions: {r: {initial: r1, states: {r1: {final: success}}}}
    done: {outcome: success, target: p}
`, `a parallel state needs a completion (done) transition without outcome or guard`},
		{"atomic region", `
initial: p
states:
  p:
    parallel: true
    regions: {r: {}}
    done: p
`, `state "p.r": a region must be a compound state`},
		{"transitions on a region root", `
initial: p
states:
  p:
    parallel: true
    regions: {r: {initial: r1, on: {x: r1}, states: {r1: {}}}}
    done: p
`, `a region's root state runs as its own execution`},
		{"internal transition to a non-descendant", `
initial: a
states:
  a: {on: {go: {target: b, internal: true}}}
  b: {}
`, `internal transition target "b" is not a descendant of the source`},
		{"completion on an atomic state", `
initial: a
states:
  a: {done: a}
`, `completion (done) transitions need a compound, parallel or invoking state`},
		{"history on an atomic state", `
initial: a
states:
  a: {history: true}
`, `history needs a compound state`},
		{"error transition without target", `
initial: a
states:
  a: {on_error: {actions: [x]}}
`, `an error transition needs a target`},
		{"initial on an atomic state", `
initial: a
states:
  a: {initial: b}
`, `initial "b" set on a state without children`},
		{"early exit on a compound state", `
initial: a
states:
  a: {early_exit: [failure], initial: b, states: {b: {}}}
`, `early_exit needs a parallel state`},
		{"no states", `id: x`, `definition has no states`},
		{"outcome on an event transition", `
initial: a
states:
  a: {on: {go: {target: a, outcome: success}}}
`, `unknown key "outcome" in transition`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("f.yaml", []byte(tt.src))
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, stead.ErrInvalid) {
				t.Fatalf("%v does not match ErrInvalid", err)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) == 0 {
				t.Fatalf("%T is not a *ValidationError with problems", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error\n%v\ndoes not contain\n%s", err, tt.want)
			}
			if !strings.Contains(err.Error(), "f.yaml") && !strings.HasPrefix(tt.want, "f.yaml") {
				t.Fatalf("error has no file name: %v", err)
			}
		})
	}
}

func TestValidateRegistry(t *testing.T) {
	t.Parallel()
	def, err := Parse("r.yaml", []byte(`
initial: a
states:
  a:
    entry: [known, unknown_entry]
    on: {go: {target: b, guard: unknown_guard, actions: [unknown_action]}}
  b: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry().Action("known", func(ActionContext) (ActionResult, error) { return ActionResult{}, nil })
	err = Validate(def, reg)
	for _, want := range []string{
		`r.yaml:4:3: state "a": entry: action "unknown_entry" is not registered`,
		`r.yaml:6:14: state "a": on go: action "unknown_action" is not registered`,
		`r.yaml:6:14: state "a": on go: guard "unknown_guard" is not registered`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nlacks %s", err, want)
		}
	}
	if _, err := NewEngine(def, reg); err == nil {
		t.Error("NewEngine accepted unregistered names")
	}
	if err := Validate(def, nil); err != nil {
		t.Errorf("without a registry names are not checked: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, src, want string }{
		{"syntax", "initial: [a\n", "f.yaml: "},
		{"empty", "", "empty document"},
		{"not a mapping", "- a\n- b\n", "1:1: expected a mapping, found a list"},
		{"unknown top-level key", "initial: a\nstatez: {}\n", `2:1: unknown key "statez"`},
		{"unknown state key", "initial: a\nstates:\n  a: {entri: [x]}\n", `3:7: unknown key "entri" in state "a"`},
		{"bad bool", "initial: a\nstates:\n  a: {parallel: maybe}\n", "3:17: expected true or false"},
		{"alias", "initial: a\nstates:\n  a: &x {}\n  b: *x\n", "aliases are not supported"},
		{"list as name", "initial: [a]\nstates: {a: {}}\n", "1:10: expected a name, found a list"},
		{"timeout without after", "initial: a\nstates:\n  a: {timeout: {target: a}}\n", "timeout needs after"},
		{"too big", "initial: a\n" + strings.Repeat("#", MaxFileSize), "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("f.yaml", []byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, stead.ErrInvalid) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestParseShorthands(t *testing.T) {
	t.Parallel()
	def, err := Parse("s.yaml", []byte(`
id: custom
trace: true
initial: a
states:
  a:
    entry: one
    history: shallow
    initial: a1
    states:
      a1:
        on:
          go: [b, {target: a, guard: g}]
          poke:
  b: {final: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	a := def.State("a")
	if def.ID != "custom" || !def.Trace || !a.History || len(a.Entry) != 1 || a.Entry[0] != "one" {
		t.Fatalf("%+v %+v", def, a)
	}
	on := def.State("a.a1").On
	if len(on) != 3 || on[0].Target != "b" || on[1].Guard != "g" || on[2].Event != "poke" || on[2].Target != "" {
		t.Fatalf("%+v", on)
	}
	if def.State("b").Final != OutcomeSuccess {
		t.Fatal("final: true is success")
	}
	if d, err := Parse("plain", []byte("initial: a\nstates: {a: {}}\n")); err != nil || d.ID != "plain" {
		t.Fatalf("default id: %v %v", d, err)
	}
}

func TestBuilderMatchesParse(t *testing.T) {
	t.Parallel()
	b := New("door")
	b.Initial("closed")
	b.State("closed").On("open", "opened").Guard("unlocked").Do("creak")
	opened := b.State("opened")
	opened.Entry("light_on").Exit("light_off")
	opened.After(time.Minute, "closed")
	opened.On("close", "closed")
	def, err := b.Definition()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := Parse("door", []byte(`
initial: closed
states:
  closed:
    on: {open: {target: opened, guard: unlocked, actions: [creak]}}
  opened:
    entry: [light_on]
    exit: [light_off]
    timeout: {after: 1m, target: closed}
    on: {close: closed}
`))
	if err != nil {
		t.Fatal(err)
	}
	if def.Mermaid() != parsed.Mermaid() {
		t.Fatalf("builder and parser disagree:\n%s\n%s", def.Mermaid(), parsed.Mermaid())
	}
	// Builder errors point at the Go line that declared the state.
	bad := New("bad")
	bad.Initial("a")
	bad.State("a").On("go", "missing")
	_, err = bad.Definition()
	if err == nil || !strings.Contains(err.Error(), "validate_test.go:") || !strings.Contains(err.Error(), `unknown target "missing"`) {
		t.Fatalf("builder error without position: %v", err)
	}
}

func TestMermaid(t *testing.T) {
	t.Parallel()
	def, err := SampleOrderFlow()
	if err != nil {
		t.Fatal(err)
	}
	m := def.Mermaid("fulfilment.packing.picking")
	for _, want := range []string{
		"stateDiagram-v2\n  [*] --> s0\n",
		`state "fulfilment" as s1`,
		"    --\n", // the region separator
		"s0 --> s1 : payment_received [amount_ok]",
		"s0 --> s12 : after 5s",
		"s1 --> s9 : done (failure)",
		"s1 --> s13 : error",
		"s4 --> [*] : success",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("diagram lacks %q:\n%s", want, m)
		}
	}
	for _, id := range []string{"s1", "s2", "s3"} {
		if !strings.Contains(m, "class "+id+" active") {
			t.Errorf("active path not highlighted (%s):\n%s", id, m)
		}
	}
	if strings.Contains(m, "class s0 active") {
		t.Error("inactive state highlighted")
	}
	three, err := Parse("three", []byte(threeLevels))
	if err != nil {
		t.Fatal(err)
	}
	m = three.Mermaid()
	for _, want := range []string{
		"    state s1 {\n      [*] --> s2\n      state \"c\" as s2\n      state \"c2\" as s3\n      s2 --> s3 : side\n",
		"    s1 --> s1 : inner / t_inner (to c2)\n",
		"  s0 --> s4 : go / t_go (from b.c)\n",
		"  s4 --> s0 : back (from y.x) (to b.c2)\n",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("diagram lacks %q:\n%s", want, m)
		}
	}
	if l := label(`a "b": c;`); l != `a 'b'#58; c#59;` {
		t.Errorf("label %q", l)
	}
}

func TestLoadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "order-flow.yaml")
	if err := os.WriteFile(path, SampleOrderFlowYAML(), 0o600); err != nil {
		t.Fatal(err)
	}
	def, err := LoadFile(path)
	if err != nil || def.ID != "order" {
		t.Fatalf("%v %v", def, err)
	}
	noID := filepath.Join(dir, "door.yml")
	if err := os.WriteFile(noID, []byte("initial: a\nstates: {a: {on: {go: b}}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = LoadFile(noID)
	if err == nil || !strings.Contains(err.Error(), noID+":2:23:") {
		t.Fatalf("error without the file path: %v", err)
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}
