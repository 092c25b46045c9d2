package chart

import (
	"errors"
	"strings"
	"testing"

	"github.com/steadhq/stead"
)

const typedChart = `
context:
  order_id: {type: string, required: true}
  amount: {type: number, default: 0}
  count: {type: integer, default: 1}
  tags: {type: list, default: []}
  meta: object
  ok: boolean
  anything: any
initial: a
states:
  a:
    on: {go: b}
  b: {entry: [act], on_error: broken}
  broken: {final: failure}
`

func TestPrepareContext(t *testing.T) {
	t.Parallel()
	var log logger
	eng := mustEngine(t, typedChart, &log, nil)
	tests := []struct {
		in   string
		want string // the prepared context, or the error it contains
		ok   bool
	}{
		{`{"order_id":"o"}`, `{"amount":0,"count":1,"order_id":"o","tags":[]}`, true},
		{`{"order_id":"o","amount":2.5,"count":3,"meta":{},"ok":true,"anything":null}`,
			`{"amount":2.5,"anything":null,"count":3,"meta":{},"ok":true,"order_id":"o","tags":[]}`, true},
		{`{"order_id":"o","amount":7}`, `"amount":7`, true},
		{`{"order_id":"o","count":1e2}`, `"count":1e2`, true},
		{`{}`, `context key "order_id" is required`, false},
		{``, `context key "order_id" is required`, false},
		{`{"order_id":5}`, `context key "order_id" is integer, not a string`, false},
		{`{"order_id":"o","count":1.5}`, `context key "count" is number, not a integer`, false},
		{`{"order_id":"o","meta":null}`, `context key "meta" is null, not a object`, false},
		{`{"order_id":"o","extra":1}`, `context key "extra" is not declared`, false},
		{`[1]`, `is not a JSON object`, false},
	}
	for _, tt := range tests {
		got, err := eng.PrepareContext([]byte(tt.in))
		switch {
		case tt.ok && err != nil:
			t.Errorf("%s: %v", tt.in, err)
		case tt.ok && !strings.Contains(string(got), tt.want):
			t.Errorf("%s: prepared %s, want %s", tt.in, got, tt.want)
		case !tt.ok && (err == nil || !errors.Is(err, stead.ErrInvalid) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want ErrInvalid containing %q", tt.in, err, tt.want)
		}
	}
	plain := mustEngine(t, "initial: a\nstates: {a: {}}\n", &log, nil)
	if got, err := plain.PrepareContext([]byte(`{"x":1}`)); err != nil || string(got) != `{"x":1}` {
		t.Fatalf("without declared keys: %s %v", got, err)
	}
}

// The start step checks and defaults the context too (an execution created without the
// client's check): a context that breaks the declaration fails the execution.
func TestStartChecksTheContext(t *testing.T) {
	t.Parallel()
	var log logger
	eng := mustEngine(t, typedChart, &log, nil)
	s := newSim(t, eng)
	s.create("good", `{"order_id":"o"}`)
	s.create("bad", `{"amount":"lots"}`)
	s.drain()
	if got := string(s.exes["good"].Context); got != `{"amount":0,"count":1,"order_id":"o","tags":[]}` {
		t.Fatalf("started with %s", got)
	}
	if got := string(s.exes["good"].StartContext); got != `{"amount":0,"count":1,"order_id":"o","tags":[]}` {
		t.Fatalf("start context kept as %s", got)
	}
	if b := s.exes["bad"]; b.Status != stead.StatusFailed || !strings.Contains(b.Error, `start context: context key "amount" is string, not a number`) {
		t.Fatalf("bad start: %s %q", b.Status, b.Error)
	}
}

func TestActionsKeepTheDeclaredContext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		res  ActionResult
		path string
		err  string
	}{
		{"a declared key of its type", ActionResult{Set: map[string]any{"amount": 3, "tags": []string{"x"}}}, "b", ""},
		{"an undeclared key", ActionResult{Set: map[string]any{"surprise": 1}}, "broken", `context key \"surprise\" is not declared`},
		{"a wrong type", ActionResult{Set: map[string]any{"count": "many"}}, "broken", `context key \"count\" is string, not a integer`},
		{"a required key deleted", ActionResult{Delete: []string{"order_id"}}, "broken", `context key \"order_id\" is required and cannot be deleted`},
		{"an optional key deleted", ActionResult{Delete: []string{"amount"}}, "b", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var log logger
			var seen string
			eng := mustEngine(t, strings.Replace(typedChart, "{final: failure}", "{final: failure, entry: [seen]}", 1), &log, map[string]Action{
				"act":  func(ActionContext) (ActionResult, error) { return tt.res, nil },
				"seen": func(a ActionContext) (ActionResult, error) { seen = string(a.Event.Data); return ActionResult{}, nil },
			})
			s := newSim(t, eng)
			s.create("x", `{"order_id":"o"}`)
			s.drain()
			s.send("x", "go", "")
			if got := s.exes["x"].ActivePath; got != tt.path {
				t.Fatalf("at %q, want %q (%s %s)", got, tt.path, s.exes["x"].Status, s.exes["x"].Error)
			}
			if tt.err != "" && !strings.Contains(seen, tt.err) {
				t.Fatalf("error event %s, want one containing %s", seen, tt.err)
			}
		})
	}
}

func TestContextValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ctx  string
		want string
	}{
		{"context: {a: {type: text}}", `test.yaml:1:11: context key "a": type "text" is not one of`},
		{"context: {a: {type: integer, default: 1.5}}", `context key "a": default is number, not a integer`},
		{"context: {a: {type: string, default: x, required: true}}", `context key "a" is required and has a default`},
		{"context: {a: {type: string, size: 3}}", `test.yaml:1:29: unknown key "size" in context key "a"`},
		{"context: {a: string}\nreturns: [b]", `returns: context key "b" is not declared`},
	}
	for _, tt := range tests {
		_, err := Parse("test.yaml", []byte(tt.ctx+"\ninitial: s\nstates: {s: {}}\n"))
		if err == nil || !errors.Is(err, stead.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error containing %q", tt.ctx, err, tt.want)
		}
	}
	b := New("x")
	b.Initial("s").State("s")
	b.Key(ContextKey{Name: "a", Type: TypeString}).Key(ContextKey{Name: "a", Type: TypeAny})
	if _, err := b.Definition(); err == nil || !strings.Contains(err.Error(), `context_test.go:`) || !strings.Contains(err.Error(), `context key "a" is declared twice`) {
		t.Fatalf("a key declared twice: %v", err)
	}
}
