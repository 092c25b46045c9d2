package worker

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
)

// counter is a hand-written Machine that exercises every side effect the worker relays, without
// the chart engine: "tick" counts, "fork" spawns two children that report back, "arm" schedules a
// timer an hour ahead whose timeout counts 100, "emit" sends a tick to the execution named in the
// event data, "finish" ends the run. The context is {"n": count, "joined": finished children}.
type counter struct{}

type counterCtx struct {
	N      int `json:"n"`
	Joined int `json:"joined"`
}

func (counter) Step(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	next := exe.Clone()
	b := stead.Bundle{ProcessedEventID: ev.ID}
	var c counterCtx
	if len(next.Context) > 0 {
		if err := json.Unmarshal(next.Context, &c); err != nil {
			return nil, b, err
		}
	}
	switch ev.Kind {
	case chart.KindStart:
		next.Status = stead.StatusRunning
		next.ActivePath = "counting"
		if next.ParentID != "" {
			// A child reports to its parent at once and is done.
			next.Status, next.Outcome = stead.StatusDone, "child"
			b.Emits = append(b.Emits, stead.Emit{Target: next.ParentID, Event: stead.Event{
				ID: "finished:" + next.ID, Kind: chart.KindFinished}})
		}
	case "tick":
		c.N++
	case "fork":
		seq := next.InvokeSeq["counting"]
		if next.InvokeSeq == nil {
			next.InvokeSeq = map[string]int{}
		}
		next.InvokeSeq["counting"] = seq + 1
		for i := range 2 {
			b.Spawns = append(b.Spawns, stead.Spawn{ChildID: fmt.Sprintf("%s:r%d:%d", next.ID, i, seq), RootPath: "counting"})
		}
	case chart.KindFinished:
		c.Joined++
	case "arm":
		b.Timers = append(b.Timers, stead.TimerOp{Action: stead.TimerSchedule, Path: "counting", FireAt: now.Add(time.Hour)})
	case chart.KindTimeout:
		c.N += 100
	case "emit":
		var target string
		if err := json.Unmarshal(ev.Data, &target); err != nil {
			return nil, b, err
		}
		b.Emits = append(b.Emits, stead.Emit{Target: target, Event: stead.Event{ID: "from:" + ev.ID, Kind: "tick"}})
	case "finish":
		next.Status, next.Outcome = stead.StatusDone, "ok"
	case "boom":
		return nil, b, fmt.Errorf("boom")
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, b, err
	}
	next.Context = raw
	next.UpdatedAt = now
	return next, b, nil
}
