package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
)

const treeFlow = `
id: tree
initial: idle
states:
  idle:
    on:
      go: par
      deeper: nest
  par:
    parallel: true
    states:
      left:
        initial: l1
        states:
          l1:
            on:
              next: l2
          l2: {final: ok}
      right:
        initial: r1
        states:
          r1: {final: ok}
    done:
      - target: end
  nest:
    initial: inner
    states:
      inner:
        on:
          out: end
  end: {final: done}
`

// TestCheckCommandMatchesTheEngine holds checkCommand, which a dry run relies on, to the
// engine's own refusals: for set-state to every path (and some that are no state) and retry, on
// roots and region children, checkCommand refuses exactly when chart.Engine.Control does.
func TestCheckCommandMatchesTheEngine(t *testing.T) {
	t.Parallel()
	def, err := chart.Parse("tree.yaml", []byte(treeFlow))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := chart.NewEngine(def, chart.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx := json.RawMessage(`{}`)
	dead := func(path string) *stead.DeadLetter {
		return &stead.DeadLetter{Event: stead.Event{ID: "e1", Kind: "go", CreatedAt: now}, Status: stead.StatusRunning,
			ActivePath: path, Context: ctx}
	}
	execs := []*stead.Execution{
		{ID: "root", Status: stead.StatusRunning, ActivePath: "idle"},
		{ID: "root-nest", Status: stead.StatusSuspended, ActivePath: "nest.inner"},
		{ID: "root-failed", Status: stead.StatusFailed, ActivePath: "idle", DeadLetter: dead("idle")},
		{ID: "root-failed-bare", Status: stead.StatusFailed, ActivePath: "idle"},
		{ID: "root-failed-par", Status: stead.StatusFailed, ActivePath: "par", DeadLetter: dead("par")},
		{ID: "child", Status: stead.StatusRunning, ActivePath: "par.left.l1", RootPath: "par.left", ParentID: "root"},
		{ID: "child-failed", Status: stead.StatusFailed, ActivePath: "par.left.l1", RootPath: "par.left", ParentID: "root",
			DeadLetter: dead("par.left.l1")},
	}
	var paths []string
	def.Walk(func(p string, _ *chart.State) { paths = append(paths, p) })
	paths = append(paths, "nowhere", "par.left.nowhere")
	var refused, taken int
	for _, exe := range execs {
		exe.DefinitionID, exe.Context, exe.CreatedAt, exe.UpdatedAt, exe.Version = "tree", ctx, now, now, 3
		var evs []stead.Event
		for _, p := range paths {
			data, _ := json.Marshal(map[string]string{"state": p})
			evs = append(evs, stead.Event{ID: "c", Kind: chart.KindSetState, Data: data, CreatedAt: now})
		}
		evs = append(evs, stead.Event{ID: "c", Kind: chart.KindRetry, CreatedAt: now},
			stead.Event{ID: "c", Kind: chart.KindReset, CreatedAt: now})
		for _, ev := range evs {
			t.Run(fmt.Sprintf("%s/%s%s", exe.ID, ev.Kind, ev.Data), func(t *testing.T) {
				_, cerr := checkCommand(exe, opOf(ev.Kind), ev, eng)
				_, _, eerr := eng.Control(exe, ev, now)
				if (cerr == nil) != (eerr == nil) {
					t.Fatalf("checkCommand: %v; the engine: %v", cerr, eerr)
				}
				if cerr != nil {
					refused++
				} else {
					taken++
				}
				if cerr != nil && !errors.Is(cerr, stead.ErrInvalid) {
					t.Fatalf("checkCommand: %v, want ErrInvalid", cerr)
				}
			})
		}
	}
	if refused < 10 || taken < 10 {
		t.Fatalf("%d refused, %d taken: the table no longer tries both sides", refused, taken)
	}
}
