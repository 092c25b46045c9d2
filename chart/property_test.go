package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// op is one thing that happens to a system of executions: an event sent to one of them, or
// time passing (which fires due timers).
type op struct {
	Target  int // index into the sorted execution ids
	Kind    int // index into the chart's kinds
	Path    int // for timeouts: index into the state paths
	Outcome int // for finished notices
	Advance time.Duration
}

type propChart struct {
	name  string
	eng   func(t tb) *Engine
	start []string // start data choices
}

// propMachines builds, by chart name, the machines a chart invokes.
var propMachines = map[string]func(t tb) []*Engine{
	"invoke and fan-out": func(t tb) []*Engine {
		s := shopSim(t, "")
		return []*Engine{s.engines["payment"], s.engines["parcel"]}
	},
}

func propCharts() []propChart {
	yamlEngine := func(src string) func(t tb) *Engine {
		return func(t tb) *Engine {
			var log logger
			return mustEngine(t, src, &log, nil, WithTrace())
		}
	}
	return []propChart{
		{"order", func(t tb) *Engine { return sampleEngine(t, WithTrace()) }, []string{
			`{"order_id":"o","amount":10,"outcome":"ok"}`, `{"order_id":"o","amount":10,"outcome":"timeout"}`,
			`{"order_id":"o","amount":10,"outcome":"crash"}`, `{"order_id":"o","amount":10,"outcome":"out_of_stock"}`,
			`{"order_id":"o","amount":99999,"outcome":"ok"}`, `{"order_id":"o","amount":10,"outcome":"error"}`}},
		{"parallel", yamlEngine(parallelChart), []string{"", `{"flag":true}`}},
		{"timers", yamlEngine(timerChart), []string{""}},
		{"nested parallel", yamlEngine(nestedParallelChart), []string{""}},
		{"three levels", yamlEngine(threeLevels), []string{""}},
		{"history", yamlEngine(strings.Replace(historyChart, "%s", "true", 1)), []string{""}},
		{"deferred", yamlEngine(deferChart), []string{""}},
		{"choice and select", func(t tb) *Engine {
			var log logger
			return choiceEngine(t, choiceChart, &log)
		}, []string{`{"amount":500}`, `{"flag":true,"label":"ok"}`, `{"label":"risky"}`, `{"label":"odd"}`}},
		{"invoke and fan-out", func(t tb) *Engine { return shopSim(t, ", fail_fast: true").eng },
			[]string{`{"total":1,"order_id":"o","parcels":["a","b"]}`, `{"parcels":[]}`, `{}`}},
		{"ttl", yamlEngine(strings.Replace(ttlChart, "%s", "true", 1)), []string{""}},
		{"typed context", yamlEngine(typedChart), []string{`{"order_id":"o"}`, `{}`, `{"order_id":"o","count":2.5}`}},
		{"deep history", yamlEngine(strings.Replace(historyChart, "%s", "deep", 1)), []string{""}},
		{"retry", func(t tb) *Engine {
			var log logger
			var calls []string
			return mustEngine(t, fmt.Sprintf(retryChart, "on_error: declined"), &log, retryActions(&calls), WithTrace())
		}, []string{`{"fail_until":1}`, `{"fail_until":2}`, `{"fail_until":3}`, `{"fail_until":9}`}},
	}
}

// play runs ops against a fresh system and returns the JSON trail of every committed
// execution and bundle. The sim checks every execution with CheckExecution as it goes.
func play(t tb, c propChart, start int, ops []op) []byte {
	eng := c.eng(t)
	s := newSim(t, eng)
	engines := []*Engine{eng}
	if more := propMachines[c.name]; more != nil {
		for _, m := range more(t) {
			s.engines[m.id] = m
			engines = append(engines, m)
		}
	}
	s.create("root", c.start[start%len(c.start)])
	s.drain()
	var kinds []string
	seen := map[string]bool{}
	var paths []string
	for _, e := range engines {
		e.def.Walk(func(p string, st *State) {
			paths = append(paths, p)
			for _, tr := range st.On {
				if !seen[tr.Event] {
					seen[tr.Event] = true
					kinds = append(kinds, tr.Event)
				}
			}
		})
	}
	kinds = append(kinds, "unknown", KindCancel, KindTimeout, KindFinished, KindStart)
	outcomes := []string{OutcomeSuccess, OutcomeFailure, OutcomeCancelled, "other"}
	for i, o := range ops {
		if o.Advance > 0 {
			s.advance(o.Advance)
			continue
		}
		ids := make([]string, 0, len(s.exes))
		for id := range s.exes {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		target := ids[o.Target%len(ids)]
		kind := kinds[o.Kind%len(kinds)]
		var data string
		switch kind {
		case KindTimeout:
			data = fmt.Sprintf(`{"path":%q}`, paths[o.Path%len(paths)])
		case KindFinished:
			raw, _ := json.Marshal(finishedData{ChildID: ids[o.Path%len(ids)], Outcome: outcomes[o.Outcome%len(outcomes)]})
			data = string(raw)
		}
		ev := fmt.Sprintf("op%d", i)
		s.queue = append(s.queue, emitTo(target, ev, kind, data))
		s.drain()
	}
	return s.trail
}

func TestPropertyRandomEvents(t *testing.T) {
	t.Parallel()
	charts := propCharts()
	rapid.Check(t, func(rt *rapid.T) {
		c := charts[rapid.IntRange(0, len(charts)-1).Draw(rt, "chart")]
		start := rapid.IntRange(0, 10).Draw(rt, "start")
		ops := rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) op {
			o := op{Target: rapid.IntRange(0, 20).Draw(rt, "target"), Kind: rapid.IntRange(0, 30).Draw(rt, "kind"),
				Path: rapid.IntRange(0, 30).Draw(rt, "path"), Outcome: rapid.IntRange(0, 3).Draw(rt, "outcome")}
			if rapid.IntRange(0, 5).Draw(rt, "tick") == 0 {
				o.Advance = time.Duration(rapid.IntRange(1, 40).Draw(rt, "seconds")) * time.Second
			}
			return o
		}), 0, 40).Draw(rt, "ops")
		first := play(rt, c, start, ops)
		second := play(rt, c, start, ops)
		if !bytes.Equal(first, second) {
			rt.Fatalf("replaying the same events gave different results:\n%s\n---\n%s", first, second)
		}
	})
}
