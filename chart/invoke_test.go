package chart

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/steadhq/stead"
)

const shopChart = `
id: shop
initial: idle
states:
  idle:
    on: {buy: paying, ship: shipping}
  paying:
    invoke: {definition: payment, input: {amount: total, order: order_id}}
    on: {abort: aborted}
    done:
      - {outcome: success, target: paid}
      - {target: declined}
  shipping:
    invoke: {definition: parcel, for_each: parcels, as: parcel, input: {order: order_id}%s}
    done:
      - {outcome: success, target: shipped}
      - {target: lost}
  paid: {on: {again: paying}}
  aborted: {on: {again: paying}}
  declined: {final: failure}
  shipped: {final: success}
  lost: {final: failure}
`

const paymentChart = `
id: payment
returns: [receipt]
initial: charging
states:
  charging:
    entry: [charge]
    on: {approve: ok, decline: refused}
  ok: {final: success}
  refused: {final: failure}
`

const parcelChart = `
id: parcel
returns: [tracking]
initial: packing
states:
  packing:
    entry: [pack]
    on: {deliver: delivered, lose: gone}
  delivered: {final: success}
  gone: {final: failure}
`

// shopSim is a sim running shop (with extra invoke options) and the two machines it invokes.
func shopSim(t tb, invokeOpts string) *sim {
	t.Helper()
	var log logger
	shop := mustEngine(t, strings.Replace(shopChart, "%s", invokeOpts, 1), &log, nil)
	payment := mustEngine(t, paymentChart, &log, map[string]Action{"charge": func(a ActionContext) (ActionResult, error) {
		return ActionResult{Set: map[string]any{"receipt": "r-" + a.String("order"), "secret": "kept"}}, nil
	}})
	parcel := mustEngine(t, parcelChart, &log, map[string]Action{"pack": func(a ActionContext) (ActionResult, error) {
		return ActionResult{Set: map[string]any{"tracking": a.String("parcel") + "-T"}}, nil
	}})
	s := newSim(t, shop)
	s.engines[payment.id], s.engines[parcel.id] = payment, parcel
	return s
}

func ctxOf(t *testing.T, exe *stead.Execution) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(exe.Context, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestInvokeSingle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		child   string // event sent to the child
		path    string
		status  stead.Status
		receipt any
	}{
		{"success routes on the outcome and copies what the child returns", "approve", "paid", stead.StatusRunning, "r-o1"},
		{"failure takes the catch-all", "decline", "declined", stead.StatusDone, "r-o1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := shopSim(t, "")
			s.create("root", `{"total":10,"order_id":"o1"}`)
			s.drain()
			s.send("root", "buy", "")
			child := s.exes["root:paying:0"]
			if child == nil || child.DefinitionID != "payment" || child.RootPath != "" || child.ParentID != "root" {
				t.Fatalf("child %+v, want an execution of payment under root", child)
			}
			if got := ctxOf(t, child); got["amount"] != 10.0 || got["order"] != "o1" || len(got) != 4 {
				t.Fatalf("child context %v, want amount and order mapped (and its receipt, secret)", got)
			}
			s.send("root:paying:0", tt.child, "")
			root := s.exes["root"]
			if root.ActivePath != tt.path || root.Status != tt.status {
				t.Fatalf("parent %s at %q, want %s at %q", root.Status, root.ActivePath, tt.status, tt.path)
			}
			got := ctxOf(t, root)
			if got["receipt"] != tt.receipt || got["secret"] != nil {
				t.Fatalf("parent context %v: want the returned receipt and not the child's other keys", got)
			}
		})
	}
}

// Leaving the invoking state cancels its child; entering it again starts a fresh one.
func TestInvokeCancelledOnExitAndFreshOnReentry(t *testing.T) {
	t.Parallel()
	s := shopSim(t, "")
	s.create("root", `{"total":10,"order_id":"o1"}`)
	s.drain()
	s.send("root", "buy", "")
	s.send("root", "abort", "")
	if c := s.exes["root:paying:0"]; c.Status != stead.StatusCancelled {
		t.Fatalf("child %s, want cancelled when the parent left the state", c.Status)
	}
	if r := s.exes["root"]; r.ActivePath != "aborted" || r.Children["root:paying:0"].Outcome != OutcomeCancelled {
		t.Fatalf("parent at %q children %v", r.ActivePath, r.Children)
	}
	s.send("root", "again", "")
	c := s.exes["root:paying:1"]
	if c == nil || c.Status != stead.StatusRunning {
		t.Fatalf("no fresh child on re-entry: %+v", c)
	}
	// A late notice from the first child changes nothing.
	s.send("root:paying:1", "approve", "")
	if r := s.exes["root"]; r.ActivePath != "paid" {
		t.Fatalf("parent at %q, want paid", r.ActivePath)
	}
}

func TestInvokeFanOut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		opts     string
		parcels  string
		events   [][2]string // child index, event
		path     string
		results  string
		statuses []stead.Status
	}{
		{"all succeed, results in item order", "", `["a","b","c"]`,
			[][2]string{{"2", "deliver"}, {"0", "deliver"}, {"1", "deliver"}}, "shipped",
			`[{"tracking":"a-T"},{"tracking":"b-T"},{"tracking":"c-T"}]`,
			[]stead.Status{stead.StatusDone, stead.StatusDone, stead.StatusDone}},
		{"one fails, the join waits for all", "", `["a","b","c"]`,
			[][2]string{{"1", "lose"}, {"0", "deliver"}, {"2", "deliver"}}, "lost",
			`[{"tracking":"a-T"},{"tracking":"b-T"},{"tracking":"c-T"}]`,
			[]stead.Status{stead.StatusDone, stead.StatusDone, stead.StatusDone}},
		{"fail fast cancels the others", ", fail_fast: true", `["a","b","c"]`,
			[][2]string{{"0", "deliver"}, {"1", "lose"}}, "lost",
			`[{"tracking":"a-T"},{"tracking":"b-T"},null]`,
			[]stead.Status{stead.StatusDone, stead.StatusDone, stead.StatusCancelled}},
		{"an empty collection completes at once", "", `[]`, nil, "shipped", `[]`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := shopSim(t, tt.opts)
			s.create("root", `{"order_id":"o1","parcels":`+tt.parcels+`}`)
			s.drain()
			s.send("root", "ship", "")
			if c := s.exes["root:shipping:0:1"]; c != nil {
				if got := ctxOf(t, c); got["parcel"] != "b" || got["index"] != 1.0 || got["order"] != "o1" {
					t.Fatalf("item 1's context %v", got)
				}
			}
			for _, e := range tt.events {
				s.send("root:shipping:0:"+e[0], e[1], "")
			}
			root := s.exes["root"]
			if root.ActivePath != tt.path {
				t.Fatalf("parent at %q, want %q", root.ActivePath, tt.path)
			}
			var m map[string]json.RawMessage
			_ = json.Unmarshal(root.Context, &m)
			if string(m["results"]) != tt.results {
				t.Fatalf("results %s, want %s", m["results"], tt.results)
			}
			for i, st := range tt.statuses {
				if c := s.exes["root:shipping:0:"+string(rune('0'+i))]; c.Status != st {
					t.Fatalf("child %d %s, want %s", i, c.Status, st)
				}
			}
		})
	}
}

func TestInvokeFanOutNeedsAList(t *testing.T) {
	t.Parallel()
	for _, start := range []string{`{}`, `{"parcels":{"a":1}}`, `{"parcels":"a"}`} {
		s := shopSim(t, "")
		s.create("root", start)
		s.drain()
		s.send("root", "ship", "")
		if r := s.exes["root"]; r.Status != stead.StatusFailed || !strings.Contains(r.Error, `"parcels"`) {
			t.Fatalf("%s: %s %q, want a failure naming the collection", start, r.Status, r.Error)
		}
	}
}

func TestInvokeValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want string
	}{
		{"initial: a\nstates:\n  a:\n    invoke: {definition: p}\n", "test.yaml:4:13: state \"a\": an invoking state needs a completion (done) transition"},
		{"initial: a\nstates:\n  a:\n    invoke: {input: {x: y}}\n    done: a\n", "invoke needs a definition id"},
		{"initial: a\nstates:\n  a:\n    invoke: {definition: p, as: x}\n    done: a\n", "as, results and fail_fast need for_each"},
		{"initial: a\nstates:\n  a:\n    invoke: {definition: p, for_each: xs, as: index}\n    done: a\n", "holds its index"},
		{"initial: a\nstates:\n  a:\n    invoke: {definition: p, each: xs}\n    done: a\n", "unknown key \"each\" in invoke"},
		{"initial: a\nstates:\n  a:\n    initial: b\n    invoke: {definition: p}\n    done: a\n    states: {b: {}}\n", "an invoking state must be atomic"},
	}
	for _, tt := range tests {
		_, err := Parse("test.yaml", []byte(tt.src))
		if err == nil || !errors.Is(err, stead.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want an error containing %q", tt.src, err, tt.want)
		}
	}
	def, err := Parse("test.yaml", []byte("initial: a\nstates:\n  a:\n    invoke: {definition: p}\n    done: a\n"))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := Parse("other.yaml", []byte("id: q\ninitial: a\nstates: {a: {}}\n"))
	if err := Validate(def, NewRegistry().Definition(other)); err == nil || !strings.Contains(err.Error(), `definition "p" is not known`) {
		t.Fatalf("an unknown invoked definition: %v", err)
	}
	p, _ := Parse("p.yaml", []byte("id: p\ninitial: a\nstates: {a: {}}\n"))
	if err := Validate(def, NewRegistry().Definition(p)); err != nil {
		t.Fatal(err)
	}
}

func TestInvokeBuilderAndMermaid(t *testing.T) {
	t.Parallel()
	b := New("shop").Returns("total")
	b.Initial("pay")
	b.State("pay").Invoke(Invoke{Definition: "payment", ForEach: "cards"}).Done("end")
	b.State("end").Final(OutcomeSuccess)
	def, err := b.Definition()
	if err != nil {
		t.Fatal(err)
	}
	if def.States[0].Invoke.Pos.Line == 0 || def.Returns[0] != "total" {
		t.Fatalf("invoke %+v returns %v", def.States[0].Invoke, def.Returns)
	}
	if m := def.Mermaid(); !strings.Contains(m, `state "pay ⇒ payment for each cards" as s0`) {
		t.Fatalf("diagram lacks the invoke:\n%s", m)
	}
}

func TestSpawnTarget(t *testing.T) {
	t.Parallel()
	if d, r := SpawnTarget("shop", "@invoke:payment"); d != "payment" || r != "" {
		t.Fatalf("invoke: %q %q", d, r)
	}
	if d, r := SpawnTarget("shop", "both.left"); d != "shop" || r != "both.left" {
		t.Fatalf("region: %q %q", d, r)
	}
}
