package steadtest

import (
	"encoding/json"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
)

// Call is one run of a registered action or selector.
type Call struct {
	Action      string
	ExecutionID string
	// State is the state whose entry or exit ran the action, or the transition's source.
	State string
	// Key is the action's idempotency key (chart.ActionContext.Key): the same on every attempt
	// of a retried step.
	Key string
	// Attempt counts the runs of the step under a retry policy: 1 for the first.
	Attempt   int
	EventKind string
	// At is the virtual time of the step.
	At  time.Time
	Err error
}

// Emitted is an event a step sent to another execution (or, with an empty Target, broadcast).
type Emitted struct {
	From   string
	Target string
	Event  stead.Event
	At     time.Time
}

// recorded wraps an action so that the kit sees its calls. The call is recorded after the
// action returns, with its error: a failed attempt of a retried step counts as a call, as it
// did run.
func (k *Kit) recorded(name string, fn chart.Action) chart.Action {
	return func(c chart.ActionContext) (chart.ActionResult, error) {
		res, err := fn(c)
		k.recMu.Lock()
		k.calls = append(k.calls, Call{Action: name, ExecutionID: c.ExecutionID, State: c.State, Key: c.Key(),
			Attempt: c.Attempt, EventKind: c.Event.Kind, At: k.Now(), Err: err})
		k.recMu.Unlock()
		return res, err
	}
}

// Calls returns the recorded calls of action, or of every action when it is empty, in the order
// they ran.
func (k *Kit) Calls(action string) []Call {
	k.recMu.Lock()
	defer k.recMu.Unlock()
	var out []Call
	for _, c := range k.calls {
		if action == "" || c.Action == action {
			out = append(out, c)
		}
	}
	return out
}

// Emitted returns the events the steps of execution from emitted, or those of every execution
// when from is empty, in the order they were emitted.
func (k *Kit) Emitted(from string) []Emitted {
	k.recMu.Lock()
	defer k.recMu.Unlock()
	var out []Emitted
	for _, e := range k.emits {
		if from == "" || e.From == from {
			out = append(out, e)
		}
	}
	return out
}

// recorder is the machine the kit's worker runs: the engine, with the emits of each step noted.
// The kit's worker is alone on its store, so every step it computes commits; a step that lost a
// race would be recorded too, but none can.
type recorder struct {
	eng *chart.Engine
	k   *Kit
}

func (r *recorder) Step(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	next, b, err := r.eng.Step(exe, ev, now)
	if err == nil {
		r.note(exe.ID, b.Emits, now)
	}
	return next, b, err
}

// Control lets operators' reset, set-state and retry reach the engine (worker.Controller).
func (r *recorder) Control(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	next, b, err := r.eng.Control(exe, ev, now)
	if err == nil {
		r.note(exe.ID, b.Emits, now)
	}
	return next, b, err
}

// PrepareContext lets Create check and default the context (worker.ContextPreparer).
func (r *recorder) PrepareContext(ctx json.RawMessage) (json.RawMessage, error) {
	return r.eng.PrepareContext(ctx)
}

func (r *recorder) note(from string, emits []stead.Emit, now time.Time) {
	if len(emits) == 0 {
		return
	}
	r.k.recMu.Lock()
	defer r.k.recMu.Unlock()
	for _, e := range emits {
		r.k.emits = append(r.k.emits, Emitted{From: from, Target: e.Target, Event: e.Event, At: now})
	}
}
