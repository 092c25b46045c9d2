package chart_test

import (
	"fmt"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
)

// Build a definition in Go, register its actions, and step an execution through it.
func Example() {
	b := chart.New("turnstile")
	b.Initial("locked")
	b.State("locked").On("coin", "unlocked").Do("count")
	unlocked := b.State("unlocked")
	unlocked.On("push", "locked")
	unlocked.After(10*time.Second, "locked")
	def, err := b.Definition()
	if err != nil {
		panic(err)
	}

	reg := chart.NewRegistry()
	reg.Action("count", func(c chart.ActionContext) (chart.ActionResult, error) {
		return chart.ActionResult{Set: map[string]any{"coins": c.Float("coins") + 1}}, nil
	})
	eng, err := chart.NewEngine(def, reg)
	if err != nil {
		panic(err)
	}

	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	exe := &stead.Execution{ID: "gate-1", DefinitionID: "turnstile", Status: stead.StatusPending}
	for _, ev := range []stead.Event{
		{ID: "e1", Kind: chart.KindStart},
		{ID: "e2", Kind: "coin"},
	} {
		next, bundle, err := eng.Step(exe, ev, now)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %s at %s, context %s, timers %v\n", ev.Kind, next.Status, next.ActivePath, next.Context, bundle.Timers)
		next.Version++ // what a store's Commit does
		exe = next
	}
	// The timer the store armed fires later; its event id is stable, so duplicates dedupe.
	fire := chart.TimeoutEvent("gate-1", "unlocked", now.Add(10*time.Second))
	next, _, _ := eng.Step(exe, fire, now.Add(10*time.Second))
	fmt.Println(fire.ID, "->", next.ActivePath)
	// Output:
	// stead.start: running at locked, context {}, timers []
	// coin: running at unlocked, context {"coins":1}, timers [{schedule unlocked 2026-01-01 12:00:10 +0000 UTC}]
	// timeout:gate-1:unlocked:1767268810000000 -> locked
}

// Load a definition from YAML; problems come back with their file positions.
func ExampleParse() {
	_, err := chart.Parse("door.yaml", []byte(`
initial: closed
states:
  closed:
    on: {open: opened}
  opened:
    timeout: {after: 0s, target: closed}
`))
	fmt.Println(err)
	// Output:
	// chart: invalid definition: door.yaml:7:14: state "opened": timeout duration 0s must be positive
}

func ExampleDefinition_Mermaid() {
	def, _ := chart.Parse("door.yaml", []byte(`
initial: closed
states:
  closed: {on: {open: opened}}
  opened: {on: {close: closed}}
`))
	fmt.Print(def.Mermaid("opened"))
	// Output:
	// stateDiagram-v2
	//   [*] --> s0
	//   state "closed" as s0
	//   state "opened" as s1
	//   s0 --> s1 : open
	//   s1 --> s0 : close
	//   classDef active fill:#f9d77e,stroke:#b8860b,stroke-width:2px
	//   class s1 active
}
