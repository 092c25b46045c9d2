package chart

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/steadhq/stead"
)

// Control applies an operator's command that follows the definition — KindReset, KindSetState or
// KindRetry — to exe and returns the next execution and the bundle to commit with it, with ev.ID
// as the processed marker. Like Step it is pure and never changes exe. worker.Client.Control
// calls it; the worker applies the other control kinds itself.
//
// A command the execution's status does not take is a *stead.StatusError: reset and set-state
// take a running, suspended or failed execution, retry a failed one. Bad data (an unknown state,
// a context that is not an object) is ErrInvalid. A suspended execution stays suspended: the
// command moves its configuration, and its queue stays parked until it is resumed.
//
// Reset returns to the initial configuration (a region child: its region's) with the context
// given, or else the one the execution started with. It is a restart, not a transition: no exit
// action runs; every armed timer is disarmed, every unfinished child is sent a cancel request
// (which overrides a child's suspension), history is forgotten, and the initial configuration is
// entered as at start, entry actions and timers included. The context it starts from becomes the
// execution's StartContext.
//
// Set-state moves to the named state as an external transition from the active leaf would: the
// states it leaves run their exit actions (innermost first, up to the least common ancestor; a
// state named again is left and re-entered), the states it enters run their entry actions
// (outermost first) and arm their timeouts, a compound target enters its initial child (or the
// one history remembers), a parallel target spawns its regions, a final target finishes the
// execution. Regions left behind are sent cancel requests. A failed execution left its states
// when it failed, so set-state runs no exit action there and enters the target from the top.
// The state must be one the execution can rest in: of its own region for a region child, and not
// inside the regions of a parallel state (those run as child executions).
//
// Retry takes a failed execution back to the status, state, context, history and timers its dead
// letter recorded, re-arms those timers at their fire times (one already due fires at the next
// sweep), and applies the dead letter's event again: the step that failed runs anew, and may fail
// again (leaving a new dead letter). A region child is not retried on its own: its failure was
// reported to its parent, which has moved on; reset or set-state the parent instead. Nor is an
// execution that failed in a parallel state, whose regions were cancelled when it failed.
func (e *Engine) Control(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	if exe == nil {
		return nil, stead.Bundle{}, fmt.Errorf("chart: %w: nil execution", stead.ErrInvalid)
	}
	if exe.DefinitionID != e.id {
		return nil, stead.Bundle{}, fmt.Errorf("chart: %w: execution %q runs definition %q, this engine runs %q",
			stead.ErrInvalid, exe.ID, exe.DefinitionID, e.id)
	}
	var op string
	switch ev.Kind {
	case KindReset:
		op = "reset"
	case KindSetState:
		op = "set-state"
	case KindRetry:
		return e.retry(exe, ev, now)
	default:
		return nil, stead.Bundle{}, fmt.Errorf("chart: %w: Control applies %s, %s and %s, not %q",
			stead.ErrInvalid, KindReset, KindSetState, KindRetry, ev.Kind)
	}
	switch exe.Status {
	case stead.StatusRunning, stead.StatusSuspended, stead.StatusFailed:
	case stead.StatusPending:
		return nil, stead.Bundle{}, &stead.StatusError{ID: exe.ID, Op: op, Status: exe.Status, Reason: "it has not started"}
	case stead.StatusCancelling:
		return nil, stead.Bundle{}, &stead.StatusError{ID: exe.ID, Op: op, Status: exe.Status, Reason: "a cancel is draining it"}
	default:
		return nil, stead.Bundle{}, &stead.StatusError{ID: exe.ID, Op: op, Status: exe.Status, Reason: "it has ended"}
	}
	out := *exe
	out.UpdatedAt = now
	s := stepper{e: e, in: exe, out: &out, now: now, ev: ev, leaf: -1, root: -1, failedAt: -1, control: true,
		keyVersion: exe.Version, attempt: 1}
	s.b.ProcessedEventID = ev.ID
	if err := s.locate(); err != nil {
		return nil, stead.Bundle{}, err
	}
	// A pending retry is abandoned: the operator decides where the execution goes instead.
	s.clearRetry(true)
	var err error
	if ev.Kind == KindReset {
		s.out.Deferred = nil
		err = s.reset()
	} else {
		err = s.setState()
	}
	if err != nil {
		return nil, stead.Bundle{}, err
	}
	if err := s.finishStep(); err != nil {
		return nil, stead.Bundle{}, err
	}
	if exe.Status == stead.StatusSuspended && s.out.Status == stead.StatusRunning {
		s.out.Status = stead.StatusSuspended
	}
	if s.entered && s.out.Status == stead.StatusRunning {
		return e.redeliver(context.Background(), s.out, s.b, now, keyRef{version: exe.Version, index: s.nextAct}, false)
	}
	return s.out, s.b, nil
}

// revive clears what a failed or finished execution carries and makes it running.
func (s *stepper) revive() {
	s.out.Status, s.out.Outcome, s.out.Error = stead.StatusRunning, "", ""
	s.out.FinishedAt, s.out.DeadLetter = time.Time{}, nil
	s.armTTL()
}

func (s *stepper) reset() error {
	var d struct {
		Context json.RawMessage `json:"context"`
	}
	if len(s.ev.Data) > 0 {
		if err := json.Unmarshal(s.ev.Data, &d); err != nil {
			return fmt.Errorf("chart: %w: reset %q: data is not {\"context\": {...}}: %v", stead.ErrInvalid, s.in.ID, err)
		}
	}
	ctx := d.Context
	if len(ctx) == 0 || string(ctx) == "null" {
		ctx = s.in.StartContext
	}
	if len(ctx) == 0 {
		ctx = json.RawMessage("{}")
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(ctx, &probe); err != nil || probe == nil {
		return fmt.Errorf("chart: %w: reset %q: the context is not a JSON object", stead.ErrInvalid, s.in.ID)
	}
	// Leave the configuration without running its exits: disarm whatever is armed, cancel the
	// unfinished children (all of them, not only the active parallel state's), and retire the
	// invoke counters of the active parallel states so that re-entering one spawns fresh ids.
	for _, path := range slices.Sorted(maps.Keys(s.in.Timers)) {
		s.b.Timers = append(s.b.Timers, stead.TimerOp{Action: stead.TimerCancel, Path: path})
	}
	s.out.Timers, s.ownTimers = nil, false
	s.cancelChildren()
	s.retireParallels()
	s.out.Children, s.ownChild = nil, false
	s.out.History, s.ownHist = nil, false
	s.out.Context = ctx
	s.ctx = &ctxState{raw: ctx}
	s.out.StartContext = nil
	if string(ctx) != "{}" {
		s.out.StartContext = ctx
	}
	s.revive()
	s.leaf = -1
	s.drive(nil, s.ev, nil)
	return nil
}

func (s *stepper) setState() error {
	var d struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal(s.ev.Data, &d); err != nil || d.State == "" {
		return fmt.Errorf("chart: %w: set-state %q: data is not {\"state\": \"<path>\"}", stead.ErrInvalid, s.in.ID)
	}
	target, ok := s.e.byPath[d.State]
	if !ok {
		return fmt.Errorf("chart: %w: set-state %q: definition %q has no state %q", stead.ErrInvalid, s.in.ID, s.e.id, d.State)
	}
	if err := s.restable(target, d.State); err != nil {
		return err
	}
	src := s.leaf
	if s.in.Status == stead.StatusFailed || src < 0 {
		// A failed execution's states were left when it failed: enter the target from the top.
		s.retireParallels()
		s.revive()
		s.leaf, src = s.root, s.root
	}
	t := &trans{src: src, target: target, domain: s.root}
	if src != s.root {
		t.domain = s.e.domain(src, target, false)
	}
	for x := target; x != t.domain; x = s.e.parent(x) {
		t.enter = append(t.enter, x)
	}
	slices.Reverse(t.enter)
	s.out.Status = stead.StatusRunning
	s.drive(t, s.ev, nil)
	return nil
}

// restable checks that the execution can rest in state n: inside its root, and not inside the
// regions of a parallel state.
func (s *stepper) restable(n int32, path string) error {
	if n == s.root {
		return fmt.Errorf("chart: %w: set-state %q: %q is the region the execution runs, not a state inside it", stead.ErrInvalid, s.in.ID, path)
	}
	for p := s.e.parent(n); p != s.root; p = s.e.parent(p) {
		if p < 0 {
			return fmt.Errorf("chart: %w: set-state %q: %q is outside the region %q the execution runs", stead.ErrInvalid, s.in.ID, path, s.in.RootPath)
		}
		if s.e.nodes[p].kind == parallelNode {
			return fmt.Errorf("chart: %w: set-state %q: %q is inside a region of parallel state %q, which runs as a child execution",
				stead.ErrInvalid, s.in.ID, path, s.e.nodes[p].path)
		}
	}
	return nil
}

// cancelChildren sends a cancel request to every unfinished child, in id order, and records it
// as finished with outcome cancelled.
func (s *stepper) cancelChildren() {
	for _, id := range slices.Sorted(maps.Keys(s.in.Children)) {
		cs := s.in.Children[id]
		if cs.Finished {
			continue
		}
		cs.Finished, cs.Outcome = true, OutcomeCancelled
		s.children()[id] = cs
		s.emit(id, stead.Event{ID: s.ev.ID, Kind: KindCancelRequest, CreatedAt: s.now})
	}
}

// retireParallels bumps the invoke counter of every parallel state on the active path, as
// leaving it would, so that entering it again spawns children with fresh ids.
func (s *stepper) retireParallels() {
	for n := s.leaf; n != s.root && n >= 0; n = s.e.parent(n) {
		if nd := &s.e.nodes[n]; nd.kind == parallelNode || nd.inv != nil {
			s.invokeSeq()[nd.path] = s.out.InvokeSeq[nd.path] + 1
		}
	}
}

// exitForCancel runs the exit actions of the active states, innermost first, as a cancel leaves
// them. An exit action that fails does not stop the cancel: the first failure is kept in Error.
func (s *stepper) exitForCancel() {
	for n := s.leaf; n != s.root && n >= 0; n = s.e.parent(n) {
		err := s.runActions(s.e.nodes[n].exit, n, s.ev)
		var ae *actionError
		switch {
		case err == nil:
		case errors.As(err, &ae):
			if s.out.Error == "" {
				s.out.Error = fmt.Sprintf("cancelled; exit of %q: %s", s.e.nodes[n].path, ae)
			}
		default:
			s.fatal = err
			return
		}
	}
}

// keepStartContext records the context the execution starts with (empty for the empty object).
func (s *stepper) keepStartContext() {
	raw, err := s.context().encode()
	if err != nil || string(raw) == "{}" {
		s.out.StartContext = nil
		return
	}
	s.out.StartContext = raw
}

// keepDeadLetter records what a retry needs: the event of this step and the state before it.
func (s *stepper) keepDeadLetter() {
	in := s.in
	s.out.DeadLetter = &stead.DeadLetter{Event: s.ev, Status: in.Status, ActivePath: in.ActivePath,
		Context: in.Context, History: in.History, Timers: in.Timers}
}

func (e *Engine) retry(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	if exe.Status != stead.StatusFailed {
		return nil, stead.Bundle{}, &stead.StatusError{ID: exe.ID, Op: "retry", Status: exe.Status, Reason: "only a failed execution is retried"}
	}
	dl := exe.DeadLetter
	if dl == nil {
		return nil, stead.Bundle{}, fmt.Errorf("chart: %w: retry %q: it keeps no dead letter to apply again", stead.ErrInvalid, exe.ID)
	}
	if exe.ParentID != "" {
		return nil, stead.Bundle{}, fmt.Errorf("chart: %w: retry %q: a child's failure was reported to its parent %q; reset or set-state the parent",
			stead.ErrInvalid, exe.ID, exe.ParentID)
	}
	back := *exe
	back.Status, back.ActivePath, back.Context, back.History, back.Timers = dl.Status, dl.ActivePath, dl.Context, dl.History, dl.Timers
	back.Outcome, back.Error, back.FinishedAt, back.DeadLetter = "", "", time.Time{}, nil
	suspended := back.Status == stead.StatusSuspended
	if suspended {
		back.Status = stead.StatusRunning // the step runs; the suspension is put back after it
	}
	if n, ok := e.byPath[back.ActivePath]; ok && (e.nodes[n].kind == parallelNode || e.nodes[n].inv != nil) {
		return nil, stead.Bundle{}, fmt.Errorf("chart: %w: retry %q: it failed in state %q, whose children were cancelled; reset or set-state it",
			stead.ErrInvalid, exe.ID, back.ActivePath)
	}
	// The timers armed before the failing step are armed again at their fire times, except the
	// one whose timeout is the dead letter: the step applies it now.
	var rearm []stead.TimerOp
	fired := ""
	if dl.Event.Kind == KindTimeout {
		var d timeoutData
		if json.Unmarshal(dl.Event.Data, &d) == nil {
			fired = d.Path
		}
	}
	for _, path := range slices.Sorted(maps.Keys(dl.Timers)) {
		if path != fired {
			rearm = append(rearm, stead.TimerOp{Action: stead.TimerSchedule, Path: path, FireAt: dl.Timers[path]})
		}
	}
	var (
		next *stead.Execution
		b    stead.Bundle
		err  error
	)
	if IsControl(dl.Event.Kind) {
		next, b, err = e.Control(&back, dl.Event, now)
	} else {
		next, b, err = e.Step(&back, dl.Event, now)
	}
	if err != nil {
		return nil, stead.Bundle{}, err
	}
	b.Timers = append(rearm, b.Timers...)
	b.ProcessedEventID = ev.ID
	if b.Trace != nil {
		// The step is the dead letter's event applied again: its id says which, the kind says
		// that it was a retry, and it started from where the execution had failed.
		b.Trace.EventKind, b.Trace.From = KindRetry, exe.ActivePath
	}
	if suspended && next.Status == stead.StatusRunning {
		next.Status = stead.StatusSuspended
	}
	return next, b, nil
}
