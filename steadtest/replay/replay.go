package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
)

// Options narrows what Check replays.
type Options struct {
	// Definitions are the exact definition ids whose executions are replayed ("order@1").
	// Empty: every version of next's definition other than next's own.
	Definitions []string
	// Statuses keeps executions with one of these statuses; empty keeps all, finished ones
	// included (their traces record paths as well as those of running ones do).
	Statuses []stead.Status
	// Limit stops after this many executions have been replayed (0: no limit).
	Limit int
}

// Report is what Check found.
type Report struct {
	// Next is the definition id the traces were replayed against.
	Next string
	// Checked counts the executions whose traces were replayed.
	Checked int
	// Changed lists the executions whose path next would change, in id order.
	Changed []Change
	// Untraced lists the executions that recorded no trace: nothing tells their path. A
	// definition records its trace with `trace: true` (or the engine option chart.WithTrace).
	Untraced []string
	// Unchecked counts the recorded steps no replay could judge (see Check).
	Unchecked int
}

// Change is the first step of an execution that next would take elsewhere.
type Change struct {
	ExecutionID  string
	DefinitionID string
	// Step is the recorded step: the event it applied, and the state it went From and To.
	Step stead.TraceStep
	// Next is the state next would be in after the step ("" when it refuses the step).
	Next string
	// Reason says what differs, in words.
	Reason string
}

func (c Change) String() string {
	return fmt.Sprintf("%s (%s) step %d, %s in %s: %s", c.ExecutionID, c.DefinitionID, c.Step.Index,
		c.Step.EventKind, or(c.Step.From, "(start)"), c.Reason)
}

// Check replays, against next, the recorded trace of every execution of an earlier version of
// next's definition (see Options) and reports those whose path next would change.
//
// Each recorded step is replayed on its own, from the state it was taken in (TraceStep.From)
// with the context the step before it left (the start context for the start): next applies the
// same kind of event, and the step is a change when next ends in another state than the one
// recorded (TraceStep.To), or refuses it (a state that next no longer has, a context its
// declaration rejects). The first change of each execution is reported. What the engine needs
// beyond the trace is rebuilt where the store keeps it: a timeout's state and fire time from its
// event id, a child's outcome and result from the parent's record. next's guards and actions
// run as in a step, so build next with a registry whose actions have no effect outside the
// process (the kit's, or stubs setting what the real ones set); their context changes do not
// carry over, since each step starts from the recorded context.
//
// Not judged, and counted in Report.Unchecked: operators' commands (they are not decided by the
// definition), the failed attempts of a retried action (the attempt that took effect is
// replayed), a step next would retry (its outcome is decided by a later attempt), and a step
// whose context before is not recorded: the first kept step of a ring whose oldest steps fell out,
// or an event a worker applied together with the execution's start in one commit (it overtook
// the start; the commit keeps one trace entry).
// Event data is not traced: a guard that reads the event sees none. Paths are compared, not
// times: a timeout that next would fire later is not a change.
func Check(ctx context.Context, store *stead.Store, next *chart.Engine, opts Options) (*Report, error) {
	if store == nil || next == nil {
		return nil, fmt.Errorf("replay: %w: nil store or engine", stead.ErrInvalid)
	}
	if opts.Limit < 0 {
		return nil, fmt.Errorf("replay: %w: negative limit %d", stead.ErrInvalid, opts.Limit)
	}
	base, _ := chart.SplitVersion(next.DefinitionID())
	want := func(id string) bool {
		if len(opts.Definitions) > 0 {
			return slices.Contains(opts.Definitions, id)
		}
		b, _ := chart.SplitVersion(id)
		return b == base && id != next.DefinitionID()
	}
	rep := &Report{Next: next.DefinitionID()}
	f := stead.ListFilter{Statuses: opts.Statuses, Limit: stead.MaxListLimit}
	if len(opts.Definitions) == 1 {
		f.DefinitionID = opts.Definitions[0]
	}
	for {
		page, err := store.List(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("replay: list executions: %w", err)
		}
		for _, it := range page.Items {
			if !want(it.DefinitionID) {
				continue
			}
			if opts.Limit > 0 && rep.Checked >= opts.Limit {
				return rep, nil
			}
			if err := checkOne(ctx, store, next, it.ID, rep); err != nil {
				return nil, err
			}
		}
		if page.NextCursor == "" {
			return rep, nil
		}
		f.Cursor = page.NextCursor
	}
}

// checkOne replays one execution's trace into rep.
func checkOne(ctx context.Context, store *stead.Store, next *chart.Engine, id string, rep *Report) error {
	exe, err := store.Load(ctx, id)
	if errors.Is(err, stead.ErrNotFound) {
		return nil // purged since the listing
	}
	if err != nil {
		return fmt.Errorf("replay: load %q: %w", id, err)
	}
	steps, err := store.ReadTrace(ctx, id)
	if err != nil {
		return fmt.Errorf("replay: trace of %q: %w", id, err)
	}
	if len(steps) == 0 {
		rep.Untraced = append(rep.Untraced, id)
		return nil
	}
	rep.Checked++
	r := replayer{ctx: ctx, store: store, next: next, exe: exe, steps: steps}
	for i := range steps {
		c, checked := r.step(i)
		if !checked {
			rep.Unchecked++
			continue
		}
		if c != nil {
			rep.Changed = append(rep.Changed, *c)
			return nil
		}
	}
	return nil
}

// replayer replays the steps of one execution.
type replayer struct {
	ctx   context.Context
	store *stead.Store
	next  *chart.Engine
	exe   *stead.Execution // the execution as it is now
	steps []stead.TraceStep
}

// step replays steps[i]; it returns the change it found, and whether the step could be judged.
func (r *replayer) step(i int) (*Change, bool) {
	st := r.steps[i]
	switch {
	case chart.IsControl(st.EventKind) || st.EventKind == chart.KindCancel:
		return nil, false
	case i+1 < len(r.steps) && r.steps[i+1].EventID == st.EventID:
		return nil, false // a failed attempt: the next step applies the same event again
	}
	in := &stead.Execution{
		ID: r.exe.ID, DefinitionID: r.next.DefinitionID(), Status: stead.StatusRunning,
		ActivePath: st.From, ParentID: r.exe.ParentID, ChildID: r.exe.ChildID, RootPath: r.exe.RootPath,
		Priority: r.exe.Priority, StartContext: r.exe.StartContext, InvokeSeq: maps.Clone(r.exe.InvokeSeq),
		Version: st.Index, CreatedAt: r.exe.CreatedAt, UpdatedAt: st.At,
	}
	switch {
	case st.EventKind == chart.KindStart:
		in.Status, in.ActivePath, in.Context, in.InvokeSeq = stead.StatusPending, "", r.exe.StartContext, nil
	case i > 0 && r.steps[i-1].Index == st.Index-1:
		in.Context = r.steps[i-1].Context
	default:
		return nil, false // the step before is not in the ring (fell out, or shared its commit)
	}
	ev := stead.Event{ID: st.EventID, Kind: st.EventKind, CreatedAt: st.At}
	switch st.EventKind {
	case chart.KindTimeout:
		path, at, ok := timeoutOf(r.exe.ID, st.EventID)
		if !ok {
			return nil, false
		}
		ev = chart.TimeoutEvent(r.exe.ID, path, at)
		in.Timers = map[string]time.Time{path: at}
	case chart.KindFinished:
		data, children, ok := r.finished(i)
		if !ok {
			return nil, false
		}
		ev.Data, in.Children = data, children
		r.entrySeq(in, st.EventID)
	}
	out, b, err := r.next.Step(in, ev, st.At)
	if err != nil {
		return r.change(st, "", fmt.Sprintf("%s refuses the step: %v", r.next.DefinitionID(), err)), true
	}
	for _, op := range b.Timers {
		if op.Path == chart.RetryTimerPath && op.Action == stead.TimerSchedule {
			return nil, false // next would retry: a later attempt decides
		}
	}
	if out.ActivePath != st.To {
		return r.change(st, out.ActivePath, fmt.Sprintf("goes to %s instead of %s", or(out.ActivePath, "(none)"), or(st.To, "(none)"))), true
	}
	return nil, true
}

func (r *replayer) change(st stead.TraceStep, to, reason string) *Change {
	return &Change{ExecutionID: r.exe.ID, DefinitionID: r.exe.DefinitionID, Step: st, Next: to, Reason: reason}
}

// timeoutOf reads the state path and fire time back from a timeout event's id
// ("timeout:<execution>:<path>:<fire time in µs>", chart.TimeoutEvent).
func timeoutOf(executionID, eventID string) (string, time.Time, bool) {
	rest, ok := strings.CutPrefix(eventID, "timeout:"+executionID+":")
	if !ok {
		return "", time.Time{}, false
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 {
		return "", time.Time{}, false
	}
	us, err := strconv.ParseInt(rest[i+1:], 10, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	return rest[:i], time.UnixMicro(us).UTC(), true
}

// finished rebuilds the data of the child's notice that steps[i] applied and the parent's
// children as they were before it: the parent's record keeps each child's outcome and result,
// and a child whose notice the trace applies at i or later had not finished yet.
func (r *replayer) finished(i int) (json.RawMessage, map[string]stead.ChildState, bool) {
	childID, ok := strings.CutPrefix(r.steps[i].EventID, "finished:")
	if !ok {
		return nil, nil, false
	}
	cs, ok := r.exe.Children[childID]
	if !ok {
		return nil, nil, false
	}
	children := maps.Clone(r.exe.Children)
	for _, st := range r.steps[i:] {
		if id, ok := strings.CutPrefix(st.EventID, "finished:"); ok && st.EventKind == chart.KindFinished {
			if c, ok := children[id]; ok {
				c.Finished, c.Outcome, c.Result = false, "", nil
				children[id] = c
			}
		}
	}
	d := struct {
		ChildID string          `json:"child_id"`
		Outcome string          `json:"outcome"`
		Result  json.RawMessage `json:"result,omitempty"`
		Error   string          `json:"error,omitempty"`
	}{ChildID: childID, Outcome: cs.Outcome, Result: cs.Result}
	if child, err := r.store.Load(r.ctx, childID); err == nil {
		d.Error = child.Error
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, nil, false
	}
	return raw, children, true
}

// entrySeq sets the entry count of the state whose child sent the notice to what it was while
// that child ran: the engine matches a notice to the current entry's children by it, and the
// record holds the count as it is now, after later exits.
// A child's id is "<parent>:<state path>:<entry>" (and ":<item>" in a fan-out); a region
// child's state path is the region's, counted on its parallel state.
func (r *replayer) entrySeq(in *stead.Execution, eventID string) {
	rest, ok := strings.CutPrefix(eventID, "finished:"+r.exe.ID+":")
	if !ok {
		return
	}
	parts := strings.Split(rest, ":")
	if len(parts) < 2 {
		return
	}
	seq, err := strconv.Atoi(parts[1])
	if err != nil {
		return
	}
	if in.InvokeSeq == nil {
		in.InvokeSeq = map[string]int{}
	}
	in.InvokeSeq[parts[0]] = seq
	if i := strings.LastIndexByte(parts[0], '.'); i > 0 {
		in.InvokeSeq[parts[0][:i]] = seq
	}
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
