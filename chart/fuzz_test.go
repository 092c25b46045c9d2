package chart

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
)

// FuzzParse feeds arbitrary bytes to the loader. Malformed files must give errors, never
// panics; files that load must compile, draw, start and take a few events without panicking or
// producing an execution CheckExecution refuses.
func FuzzParse(f *testing.F) {
	f.Add(SampleOrderFlowYAML())
	for _, seed := range []string{threeLevels, historyChart, timerChart, parallelChart, deferChart, choiceChart, typedChart, shopChart, paymentChart, strings.Replace(ttlChart, "%s", "true", 1),
		strings.Replace(historyChart, "%s", "deep", 1),
		"initial: a\nstates: {a: {}}\n",
		"initial: a\nstates:\n  a: {on: {go: b}}\n  b: {final: done}\n",
		"initial: a\nstates:\n  a: &x {}\n  b: *x\n",
		"initial: [a\n",
		"initial: a\nstates:\n  a: {entry: [fail_x], on: {go: b}, on_error: b}\n  b: {final: done}\nretry: {fail_x: {attempts: 3, backoff: 1s, jitter: 0.3}}\n",
		"{initial: p, states: {p: {parallel: true, regions: {r: {initial: a, states: {a: {final: success}}}}, done: q}, q: {}}}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		def, err := Parse("fuzz.yaml", data)
		if err != nil {
			if def != nil {
				t.Fatal("definition returned with an error")
			}
			return
		}
		_ = def.Mermaid()
		var log logger
		reg := testRegistry(def, &log, nil)
		failing(reg)
		eng, err := NewEngine(def, reg)
		if err != nil {
			t.Fatalf("a parsed definition does not compile: %v", err)
		}
		exe := &stead.Execution{ID: "f", DefinitionID: def.ID, Status: stead.StatusPending}
		kinds := []string{KindStart, "go", "next", "a", "b", KindCancel}
		def.Walk(func(_ string, s *State) {
			for _, tr := range s.On {
				kinds = append(kinds[:len(kinds)-1], tr.Event, KindCancel)
			}
		})
		for i, k := range kinds {
			out, _, err := eng.Step(exe, stead.Event{ID: string(rune('a' + i%26)), Kind: k}, t0)
			if err != nil {
				t.Fatalf("step %s: %v", k, err)
			}
			if err := eng.CheckExecution(out); err != nil {
				t.Fatalf("step %s: %v", k, err)
			}
			exe = out
		}
		for i := 0; i < 3 && exe.Timers[RetryTimerPath] != (time.Time{}); i++ {
			out, _, err := eng.Step(exe, TimeoutEvent("f", RetryTimerPath, exe.Timers[RetryTimerPath]), t0)
			if err != nil {
				t.Fatalf("retry %d: %v", i, err)
			}
			if err := eng.CheckExecution(out); err != nil {
				t.Fatalf("retry %d: %v", i, err)
			}
			exe = out
		}
	})
}

// failing makes every action whose name starts with "fail" fail on its first two attempts.
func failing(reg *Registry) {
	for name := range reg.actions {
		if strings.HasPrefix(name, "fail") {
			reg.Action(name, func(a ActionContext) (ActionResult, error) {
				if a.Attempt < 3 {
					return ActionResult{}, errors.New("not yet")
				}
				return ActionResult{}, nil
			})
		}
	}
}
