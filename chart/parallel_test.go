package chart

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/steadhq/stead"
)

const parallelChart = `
initial: idle
states:
  idle:
    on: {go: work}
  work:
    parallel: true
    early_exit: [failure]
    entry: [en_work]
    exit: [ex_work]
    on:
      abort: aborted
    regions:
      left:
        initial: l1
        entry: [en_left]
        states:
          l1:
            on:
              l_ok: l_done
              l_bad: l_fail
              ping: {actions: [left_ping]}
          l_done: {final: success}
          l_fail: {final: failure}
      right:
        initial: r1
        states:
          r1:
            on:
              r_ok: r_done
              r_bad: r_fail
              ping: {actions: [right_ping]}
          r_done: {final: success}
          r_fail: {final: failure}
    done:
      - {outcome: failure, target: failed_join}
      - {target: joined}
  joined:
    on: {again: work}
  failed_join: {}
  aborted:
    on: {again: work}
`

func parallelSim(t *testing.T) (*sim, *logger) {
	var log logger
	eng := mustEngine(t, parallelChart, &log, nil)
	s := newSim(t, eng)
	s.create("p", `{"order": 7}`)
	s.drain()
	return s, &log
}

func TestParallelEntrySpawnsRegions(t *testing.T) {
	t.Parallel()
	var log logger
	eng := mustEngine(t, parallelChart, &log, nil)
	exe, b := run(t, eng, "go")
	if exe.ActivePath != "work" || exe.Status != stead.StatusRunning {
		t.Fatalf("parent at %q %s", exe.ActivePath, exe.Status)
	}
	want := []stead.Spawn{
		{ChildID: "x:work.left:0", RootPath: "work.left", Context: json.RawMessage(`{}`)},
		{ChildID: "x:work.right:0", RootPath: "work.right", Context: json.RawMessage(`{}`)},
	}
	if !reflect.DeepEqual(b.Spawns, want) {
		t.Fatalf("spawns\n got %+v\nwant %+v", b.Spawns, want)
	}
	wantChildren := map[string]stead.ChildState{
		"x:work.left:0":  {RootPath: "work.left", Key: "work.left"},
		"x:work.right:0": {RootPath: "work.right", Key: "work.right"},
	}
	if !reflect.DeepEqual(exe.Children, wantChildren) {
		t.Fatalf("children %+v", exe.Children)
	}
}

func TestParallelChildRunsOnlyItsRegion(t *testing.T) {
	t.Parallel()
	s, log := parallelSim(t)
	s.send("p", "go", "")
	left, right := s.exes["p:work.left:0"], s.exes["p:work.right:0"]
	if left.Status != stead.StatusRunning || left.ActivePath != "work.left.l1" || left.ParentID != "p" {
		t.Fatalf("left child %+v", left)
	}
	if right.ActivePath != "work.right.r1" || string(right.Context) != `{"order":7}` {
		t.Fatalf("right child %+v (%s)", right, right.Context)
	}
	// en_work ran once in the parent; en_left once in the left child; nothing else.
	if !reflect.DeepEqual(log.calls, []string{"en_work", "en_left"}) {
		t.Fatalf("actions %v", log.calls)
	}
	// A child ignores events of its parent's states: "go" and "abort" are not in its region.
	s.send("p:work.left:0", "abort", "")
	if got := s.exes["p:work.left:0"].ActivePath; got != "work.left.l1" {
		t.Fatalf("child left its region: %q", got)
	}
}

func TestParallelJoin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		events     []string // sent to the regions, in order: "left:l_ok" style
		wantPath   string
		wantLeft   stead.Status
		wantRight  stead.Status
		wantJoined map[string]string // child id -> outcome in the parent's join state
	}{
		{"left finishes before right; the join waits", []string{"left:l_ok"}, "work",
			stead.StatusDone, stead.StatusRunning,
			map[string]string{"p:work.left:0": "success", "p:work.right:0": ""}},
		{"both finish", []string{"right:r_ok", "left:l_ok"}, "joined",
			stead.StatusDone, stead.StatusDone,
			map[string]string{"p:work.left:0": "success", "p:work.right:0": "success"}},
		{"an early-exit outcome cancels the sibling", []string{"right:r_bad"}, "failed_join",
			stead.StatusCancelled, stead.StatusDone,
			map[string]string{"p:work.left:0": "cancelled", "p:work.right:0": "failure"}},
		{"the parent leaving cancels the regions", []string{"parent:abort"}, "aborted",
			stead.StatusCancelled, stead.StatusCancelled,
			map[string]string{"p:work.left:0": "cancelled", "p:work.right:0": "cancelled"}},
		{"cancelling the parent cancels the regions", []string{"parent:" + KindCancel}, "work",
			stead.StatusCancelled, stead.StatusCancelled,
			map[string]string{"p:work.left:0": "cancelled", "p:work.right:0": "cancelled"}},
		{"a region cancelled on its own counts as a finished region", []string{"left:" + KindCancel, "right:r_ok"}, "joined",
			stead.StatusCancelled, stead.StatusDone,
			map[string]string{"p:work.left:0": "cancelled", "p:work.right:0": "success"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, _ := parallelSim(t)
			s.send("p", "go", "")
			for _, e := range tt.events {
				who, kind, _ := cut(e)
				target := map[string]string{"left": "p:work.left:0", "right": "p:work.right:0", "parent": "p"}[who]
				s.send(target, kind, "")
			}
			p := s.exes["p"]
			if p.ActivePath != tt.wantPath {
				t.Fatalf("parent at %q (%s), want %q", p.ActivePath, p.Status, tt.wantPath)
			}
			if l, r := s.exes["p:work.left:0"].Status, s.exes["p:work.right:0"].Status; l != tt.wantLeft || r != tt.wantRight {
				t.Fatalf("children %s %s, want %s %s", l, r, tt.wantLeft, tt.wantRight)
			}
			for id, outcome := range tt.wantJoined {
				c := p.Children[id]
				if c.Outcome != outcome || c.Finished != (outcome != "") {
					t.Fatalf("join state of %s: %+v, want outcome %q", id, c, outcome)
				}
			}
		})
	}
}

func cut(s string) (string, string, bool) {
	for i := range s {
		if s[i] == ':' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func TestParallelForwardsUnhandledEvents(t *testing.T) {
	t.Parallel()
	s, log := parallelSim(t)
	s.send("p", "go", "")
	s.send("p:work.left:0", "l_ok", "")
	log.calls = nil
	s.send("p", "ping", "")
	// Only the unfinished right region gets it.
	if !reflect.DeepEqual(log.calls, []string{"right_ping"}) {
		t.Fatalf("actions %v", log.calls)
	}
}

func TestParallelReentryUsesFreshChildIDs(t *testing.T) {
	t.Parallel()
	s, _ := parallelSim(t)
	s.send("p", "go", "")
	s.send("p", "abort", "")
	s.send("p", "again", "")
	p := s.exes["p"]
	if p.ActivePath != "work" || p.InvokeSeq["work"] != 1 {
		t.Fatalf("parent %+v", p)
	}
	if _, ok := p.Children["p:work.left:1"]; !ok || len(p.Children) != 2 {
		t.Fatalf("children %+v", p.Children)
	}
	if c := s.exes["p:work.left:1"]; c == nil || c.Status != stead.StatusRunning {
		t.Fatalf("new left child %+v", c)
	}
	// A late notice from the first generation is ignored.
	old := finishedData{ChildID: "p:work.left:0", Outcome: "success"}
	raw, _ := json.Marshal(old)
	before := p.Children
	s.queue = append(s.queue, stead.Emit{Target: "p", Event: stead.Event{ID: "late", Kind: KindFinished, Data: raw}})
	s.drain()
	if !reflect.DeepEqual(s.exes["p"].Children, before) || s.exes["p"].ActivePath != "work" {
		t.Fatalf("late notice changed the join: %+v", s.exes["p"].Children)
	}
	s.send("p:work.left:1", "l_ok", "")
	s.send("p:work.right:1", "r_ok", "")
	if got := s.exes["p"].ActivePath; got != "joined" {
		t.Fatalf("second join: parent at %q", got)
	}
}

func TestParallelRegionResults(t *testing.T) {
	t.Parallel()
	var log logger
	extra := map[string]Action{
		"mark_a": func(ActionContext) (ActionResult, error) {
			return ActionResult{Set: map[string]any{"a": 1}, Send: []Message{{Kind: "fin"}}}, nil
		},
		"mark_b": func(ActionContext) (ActionResult, error) { return ActionResult{Set: map[string]any{"b": 2}}, nil },
	}
	src := `
initial: p
states:
  p:
    parallel: true
    regions:
      a: {initial: a1, states: {a1: {entry: [mark_a], on: {fin: a2}}, a2: {final: success}}}
      b: {initial: b1, states: {b1: {entry: [mark_b], on: {fin: b2}}, b2: {final: success}}}
    done: end
  end: {final: success}
`
	eng := mustEngine(t, src, &log, extra)
	s := newSim(t, eng)
	s.create("r", "")
	s.drain()
	s.send("r:p.b:0", "fin", "")
	r := s.exes["r"]
	if r.Status != stead.StatusDone || string(r.Context) != `{"region_results":{"a":{"a":1},"b":{"b":2}}}` {
		t.Fatalf("%s %s", r.Status, r.Context)
	}
}

const nestedParallelChart = `
initial: outer
states:
  outer:
    parallel: true
    regions:
      a:
        initial: inner
        states:
          inner:
            parallel: true
            regions:
              x: {initial: x1, states: {x1: {on: {fin: x2}}, x2: {final: success}}}
              y: {initial: y1, states: {y1: {on: {fin: y2}}, y2: {final: success}}}
            done: a_done
          a_done: {final: success}
      b: {initial: b1, states: {b1: {on: {fin: b2}}, b2: {final: success}}}
    done: end
  end: {final: success}
`

func TestNestedParallel(t *testing.T) {
	t.Parallel()
	var log logger
	src := nestedParallelChart
	s := newSim(t, mustEngine(t, src, &log, nil))
	s.create("n", "")
	s.drain()
	a := s.exes["n:outer.a:0"]
	if a == nil || a.ActivePath != "outer.a.inner" || len(a.Children) != 2 {
		t.Fatalf("region a: %+v", a)
	}
	grand := "n:outer.a:0:outer.a.inner.x:0"
	if g := s.exes[grand]; g == nil || g.ParentID != "n:outer.a:0" || g.ActivePath != "outer.a.inner.x.x1" {
		t.Fatalf("grandchild %+v", g)
	}
	// An event sent to the root reaches every leaf region through two levels of forwarding.
	s.send("n", "fin", "")
	n := s.exes["n"]
	if n.Status != stead.StatusDone || n.ActivePath != "end" {
		t.Fatalf("root %s at %q", n.Status, n.ActivePath)
	}
	if len(s.exes) != 5 {
		t.Fatalf("%d executions, want 5", len(s.exes))
	}
}
