package chart_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
)

type ctxKey struct{}

// TestActionContextContext: an action sees the context StepContext was given, context.Background
// under Step, and an action that fails on a done context takes the error transition.
func TestActionContextContext(t *testing.T) {
	b := chart.New("io").DefaultRetry(*chart.NoRetry()) // the failure is the point: no retry
	b.Initial("idle")
	b.State("idle").On("go", "calling")
	calling := b.State("calling").Entry("call")
	calling.OnError("failed")
	calling.On("ok", "idle")
	b.State("failed").Final("failure")
	def, err := b.Definition()
	if err != nil {
		t.Fatal(err)
	}
	var seen context.Context
	reg := chart.NewRegistry().Action("call", func(c chart.ActionContext) (chart.ActionResult, error) {
		seen = c.Context()
		return chart.ActionResult{}, c.Context().Err()
	})
	eng, err := chart.NewEngine(def, reg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	exe := &stead.Execution{ID: "e", DefinitionID: "io", Status: stead.StatusPending}
	exe, _, err = eng.Step(exe, stead.Event{ID: "s", Kind: chart.KindStart}, now)
	if err != nil {
		t.Fatal(err)
	}
	go1 := stead.Event{ID: "g", Kind: "go"}

	live := context.WithValue(context.Background(), ctxKey{}, "mine")
	out, _, err := eng.StepContext(live, exe, go1, now)
	if err != nil || out.ActivePath != "calling" || seen.Value(ctxKey{}) != "mine" {
		t.Fatalf("StepContext: path %q, err %v, context value %v", out.ActivePath, err, seen.Value(ctxKey{}))
	}
	if _, _, err := eng.Step(exe, go1, now); err != nil || seen != context.Background() {
		t.Fatalf("Step: err %v, context %v; want context.Background", err, seen)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	out, _, err = eng.StepContext(done, exe, go1, now)
	if err != nil || out.Status != stead.StatusDone || out.Outcome != "failure" || !errors.Is(seen.Err(), context.Canceled) {
		t.Fatalf("done context: status %s outcome %q err %v", out.Status, out.Outcome, err)
	}
	if (chart.ActionContext{}).Context() != context.Background() {
		t.Fatal("a zero ActionContext must give context.Background")
	}
}
