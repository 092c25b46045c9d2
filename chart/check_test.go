package chart

import (
	"errors"
	"testing"
	"time"

	"github.com/steadhq/stead"
)

func TestCheckExecution(t *testing.T) {
	t.Parallel()
	var log logger
	eng := mustEngine(t, parallelChart, &log, nil)
	running, _ := run(t, eng, "go") // parent parked on the parallel state "work"
	done := mustEngine(t, `{initial: a, states: {a: {on: {end: fin}}, fin: {final: good}}}`, &log, nil)
	finished, _ := run(t, done, "end")
	mod := func(base *stead.Execution, f func(e *stead.Execution)) *stead.Execution {
		c := base.Clone()
		f(c)
		return c
	}
	if err := eng.CheckExecution(running); err != nil {
		t.Fatalf("a real execution refused: %v", err)
	}
	if err := done.CheckExecution(finished); err != nil {
		t.Fatalf("a real execution refused: %v", err)
	}
	tests := []struct {
		name string
		eng  *Engine
		exe  *stead.Execution
	}{
		{"nil", eng, nil},
		{"store-invalid", eng, mod(running, func(e *stead.Execution) { e.ID = "" })},
		{"other definition", eng, mod(running, func(e *stead.Execution) { e.DefinitionID = "zzz" })},
		{"pending with a path", eng, mod(running, func(e *stead.Execution) { e.Status = stead.StatusPending })},
		{"running on a compound", eng, mod(running, func(e *stead.Execution) { e.ActivePath = "work.left" })},
		{"running on nothing", eng, mod(running, func(e *stead.Execution) { e.ActivePath = "" })},
		{"unknown path", eng, mod(running, func(e *stead.Execution) { e.ActivePath = "nowhere" })},
		{"missing join entry", eng, mod(running, func(e *stead.Execution) { delete(e.Children, "x:work.left:0") })},
		{"foreign child", eng, mod(running, func(e *stead.Execution) {
			e.Children["other:work.left:0"] = stead.ChildState{RootPath: "work.left"}
		})},
		{"child of no region", eng, mod(running, func(e *stead.Execution) {
			e.Children["x:idle:0"] = stead.ChildState{RootPath: "idle"}
		})},
		{"history of a state without history", eng, mod(running, func(e *stead.Execution) { e.History = map[string]string{"work": "work.left"} })},
		{"invoke counter of a non-parallel state", eng, mod(running, func(e *stead.Execution) { e.InvokeSeq = map[string]int{"idle": 1} })},
		{"region path outside root", eng, mod(running, func(e *stead.Execution) { e.RootPath = "work.left" })},
		{"done on a non-final state", done, mod(finished, func(e *stead.Execution) { e.ActivePath = "a" })},
		{"done with the wrong outcome", done, mod(finished, func(e *stead.Execution) { e.Outcome = "bad" })},
		{"done without a finish time", done, mod(finished, func(e *stead.Execution) { e.FinishedAt = time.Time{} })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.eng.CheckExecution(tt.exe); !errors.Is(err, stead.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
		})
	}
}
