package chart

import (
	"testing"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/benchutil"
)

func benchEngine(b *testing.B, src string, extra map[string]Action) (*Engine, *stead.Execution) {
	b.Helper()
	var log logger
	eng := mustEngine(b, src, &log, extra)
	exe, _, err := eng.Step(&stead.Execution{ID: "bench-execution-0001", DefinitionID: eng.id, Status: stead.StatusPending},
		stead.Event{ID: "start", Kind: KindStart}, t0)
	if err != nil {
		b.Fatal(err)
	}
	return eng, exe
}

func benchSteps(b *testing.B, eng *Engine, exe *stead.Execution, kind string, wantPaths ...string) {
	ev := stead.Event{ID: "event-0001", Kind: kind}
	b.ReportAllocs()
	cpu0 := benchutil.CPUTime()
	b.ResetTimer()
	for b.Loop() {
		next, _, err := eng.Step(exe, ev, t0)
		if err != nil {
			b.Fatal(err)
		}
		exe = next
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "transitions/s")
	// On a shared machine wall time includes waiting for a core; CPU time is what the steps
	// (and the garbage collector they cause) actually cost.
	if cpu := benchutil.CPUTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "transitions/cpu-s")
	}
	for _, p := range wantPaths {
		if exe.ActivePath == p {
			return
		}
	}
	b.Fatalf("ended at %q, not one of %v: the benchmark did not transition", exe.ActivePath, wantPaths)
}

// A flat machine: two atomic states toggling on one event.
func BenchmarkStepFlat(b *testing.B) {
	eng, exe := benchEngine(b, `
initial: a
states:
  a: {on: {toggle: b}}
  b: {on: {toggle: a}}
`, nil)
	benchSteps(b, eng, exe, "toggle", "a", "b")
}

// Three levels: each step exits three states and enters three (a.b.c <-> z.y.x).
func BenchmarkStepHierarchical(b *testing.B) {
	eng, exe := benchEngine(b, `
initial: a
states:
  a:
    initial: b
    states:
      b:
        initial: c
        states:
          c: {on: {flip: z}}
  z:
    initial: y
    states:
      y:
        initial: x
        states:
          x: {on: {flip: a}}
`, nil)
	benchSteps(b, eng, exe, "flip", "a.b.c", "z.y.x")
}

// The flat toggle with one action that reads and sets a context key (with a typed setter): the
// cost of reading and re-encoding the context.
func BenchmarkStepFlatWithAction(b *testing.B) {
	eng, exe := benchEngine(b, `
initial: a
states:
  a: {on: {toggle: {target: b, actions: [bump]}}}
  b: {on: {toggle: a}}
`, map[string]Action{"bump": func(c ActionContext) (ActionResult, error) {
		c.SetFloat("n", c.Float("n")+1)
		return ActionResult{}, nil
	}})
	benchSteps(b, eng, exe, "toggle", "a", "b")
}

// The same action setting its key through ActionResult.Set: the map and the boxed value.
func BenchmarkStepFlatWithActionMap(b *testing.B) {
	eng, exe := benchEngine(b, `
initial: a
states:
  a: {on: {toggle: {target: b, actions: [bump]}}}
  b: {on: {toggle: a}}
`, map[string]Action{"bump": func(c ActionContext) (ActionResult, error) {
		return ActionResult{Set: map[string]any{"n": c.Float("n") + 1}}, nil
	}})
	benchSteps(b, eng, exe, "toggle", "a", "b")
}

// The flat toggle where one state has a timeout: timer ops in every bundle.
func BenchmarkStepFlatWithTimer(b *testing.B) {
	eng, exe := benchEngine(b, `
initial: a
states:
  a: {on: {toggle: b}}
  b: {on: {toggle: a}, timeout: {after: 30s, target: a}}
`, nil)
	benchSteps(b, eng, exe, "toggle", "a", "b")
}

// An event nobody handles: the floor cost of a step.
func BenchmarkStepIgnored(b *testing.B) {
	eng, exe := benchEngine(b, `
initial: a
states:
  a: {on: {toggle: a}}
`, nil)
	benchSteps(b, eng, exe, "other", "a")
}

func BenchmarkParseSample(b *testing.B) {
	src := SampleOrderFlowYAML()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("order.yaml", src); err != nil {
			b.Fatal(err)
		}
	}
}
