package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/transport"
)

// Op names an operator's control command.
type Op string

// The control commands. See Client.Control for what each does.
const (
	OpSuspend  Op = "suspend"
	OpResume   Op = "resume"
	OpCancel   Op = "cancel"
	OpReset    Op = "reset"
	OpSetState Op = "set-state"
	OpRetry    Op = "retry"
)

// Ops returns every control command, in the order the documentation gives them.
func Ops() []Op { return []Op{OpSuspend, OpResume, OpCancel, OpReset, OpSetState, OpRetry} }

// kind is the control event kind of op, or "" for an unknown op.
func (op Op) kind() string {
	switch op {
	case OpSuspend:
		return chart.KindSuspend
	case OpResume:
		return chart.KindResume
	case OpCancel:
		return chart.KindCancelRequest
	case OpReset:
		return chart.KindReset
	case OpSetState:
		return chart.KindSetState
	case OpRetry:
		return chart.KindRetry
	}
	return ""
}

// MaxCommandIDLen bounds a command id: the event a cancel queues behind the backlog carries it
// with a prefix, and must still be a valid event id.
const MaxCommandIDLen = 256

// Command is one control command for Client.Control and Client.ControlMatching.
type Command struct {
	Op Op
	// ID makes the command idempotent: an execution applies a command id at most once, so the
	// same command sent again with the same id (after the operator's process died, say) changes
	// nothing the second time. Empty: a fresh random id. At most MaxCommandIDLen bytes.
	ID string
	// State is the path of the state set-state moves to (OpSetState only).
	State string
	// Context is the context reset starts from, a JSON object; nil: the context the execution
	// started with (OpReset only).
	Context json.RawMessage
}

// event checks cmd and returns the control event that carries it, stamped now.
func (cmd Command) event(now time.Time) (stead.Event, error) {
	kind := cmd.Op.kind()
	if kind == "" {
		return stead.Event{}, check.Invalidf("unknown control command %q", cmd.Op)
	}
	if cmd.ID == "" {
		cmd.ID = "cmd-" + NewEventID()[3:]
	}
	if err := check.TextMax("command id", cmd.ID, MaxCommandIDLen); err != nil {
		return stead.Event{}, err
	}
	if cmd.State != "" && cmd.Op != OpSetState {
		return stead.Event{}, check.Invalidf("%s takes no state", cmd.Op)
	}
	if len(cmd.Context) > 0 && cmd.Op != OpReset {
		return stead.Event{}, check.Invalidf("%s takes no context", cmd.Op)
	}
	ev := stead.Event{ID: cmd.ID, Kind: kind, CreatedAt: now}
	var err error
	switch cmd.Op {
	case OpSetState:
		if err := check.ID("set-state state", cmd.State); err != nil {
			return stead.Event{}, err
		}
		ev.Data, err = json.Marshal(map[string]string{"state": cmd.State})
	case OpReset:
		if err := check.JSONObject("reset context", cmd.Context); err != nil {
			return stead.Event{}, err
		}
		if len(cmd.Context) > 0 {
			ev.Data, err = json.Marshal(map[string]json.RawMessage{"context": cmd.Context})
		}
	}
	if err != nil {
		return stead.Event{}, check.Invalidf("%s: %v", cmd.Op, err)
	}
	return ev, ev.Validate()
}

// Controller is a Machine that also applies the control commands that follow its definition:
// reset, set-state and retry. *chart.Engine is one. Suspend, resume and cancel change only the
// status, and the worker applies them whatever the Machine.
type Controller interface {
	Machine
	// Control applies the control event ev (chart.KindReset, KindSetState or KindRetry) to exe
	// and returns the next execution and the bundle to commit with it. A status the command does
	// not take is a *stead.StatusError. It must not change exe.
	Control(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error)
}

// Outcome is what a control command did to one execution.
type Outcome struct {
	ExecutionID string
	CommandID   string
	// Repeat is true when the execution had applied this command id before: nothing changed now,
	// and what the first application left undelivered (its process died, say) was delivered.
	Repeat bool
	// Status and Version are the execution's once the command is applied.
	Status  stead.Status
	Version int64
}

// cancelEventID is the id of the event a cancel queues behind the backlog of the execution.
func cancelEventID(commandID string) string { return "cancel:" + commandID }

// refuse returns the StatusError of op on exe.
func refuse(exe *stead.Execution, op Op, reason string) error {
	return &stead.StatusError{ID: exe.ID, Op: string(op), Status: exe.Status, Reason: reason}
}

// CheckCommand reports whether exe's status takes op: nil, or the *stead.StatusError that
// Client.Control would return, without writing anything. It checks the status only: reset,
// set-state and retry are checked further when applied (the machine, the state, the dead
// letter); Client.CheckControl and a dry run of ControlMatching run every check.
func CheckCommand(exe *stead.Execution, op Op) error { return admitCommand(exe, op) }

// admitCommand reports whether exe's status takes the command, with the reason when it does not.
// It is the first check of checkCommand, which both a command and its dry run go through.
func admitCommand(exe *stead.Execution, op Op) error {
	st := exe.Status
	switch {
	case st == stead.StatusDone || st == stead.StatusCancelled:
		return refuse(exe, op, "it has ended")
	case st == stead.StatusCancelling:
		return refuse(exe, op, "a cancel is draining it")
	}
	switch op {
	case OpSuspend:
		switch st {
		case stead.StatusRunning:
			return nil
		case stead.StatusPending:
			return refuse(exe, op, "it has not started")
		case stead.StatusSuspended:
			return refuse(exe, op, "it is suspended already")
		}
		return refuse(exe, op, "only a running execution is suspended")
	case OpResume:
		if st == stead.StatusSuspended {
			return nil
		}
		return refuse(exe, op, "only a suspended execution is resumed")
	case OpCancel:
		return nil // pending, running, suspended or failed
	case OpReset, OpSetState:
		if st == stead.StatusPending {
			return refuse(exe, op, "it has not started")
		}
		return nil
	case OpRetry:
		if st == stead.StatusFailed {
			return nil
		}
		return refuse(exe, op, "only a failed execution is retried")
	}
	return check.Invalidf("unknown control command %q", op)
}

func opOf(kind string) Op {
	for _, op := range Ops() {
		if op.kind() == kind {
			return op
		}
	}
	return ""
}

// applyCommand computes what the control event ev does to exe: the next execution and the bundle
// to commit with it, whose processed marker is ev.ID. Suspend, resume and cancel change the status
// and cascade to the unfinished children as control events of the same id, whatever m is; reset,
// set-state and retry go to m, which must be a Controller.
func applyCommand(exe *stead.Execution, ev stead.Event, m Machine, now time.Time) (*stead.Execution, stead.Bundle, error) {
	op := opOf(ev.Kind)
	if op == "" {
		return nil, stead.Bundle{}, check.Invalidf("%q is not a control event", ev.Kind)
	}
	c, err := checkCommand(exe, op, ev, m)
	if err != nil {
		return nil, stead.Bundle{}, err
	}
	switch op {
	case OpReset, OpSetState, OpRetry:
		next, b, err := c.Control(exe, ev, now)
		if err != nil {
			return nil, stead.Bundle{}, err
		}
		if next == nil {
			return nil, stead.Bundle{}, fmt.Errorf("worker: %s of %q returned no execution", op, exe.ID)
		}
		b.ProcessedEventID = ev.ID
		return next, b, nil
	}
	next := exe.Clone()
	next.UpdatedAt = now
	b := stead.Bundle{ProcessedEventID: ev.ID}
	cascade := ev.Kind
	switch {
	case op == OpSuspend:
		next.Status = stead.StatusSuspended
	case op == OpResume:
		next.Status = stead.StatusRunning
	case exe.Status == stead.StatusFailed:
		// A failed execution applies nothing any more: there is no backlog to drain.
		next.Status, next.FinishedAt, next.DeadLetter = stead.StatusCancelled, now, nil
	default:
		// The cancel's own event goes behind whatever is queued: the worker drops the backlog
		// unapplied until it arrives, then ends the execution (exit actions, timers, parent).
		next.Status = stead.StatusCancelling
		b.Emits = append(b.Emits, stead.Emit{Target: exe.ID, Event: stead.Event{
			ID: cancelEventID(ev.ID), Kind: chart.KindCancel, CreatedAt: now}})
	}
	for _, id := range slices.Sorted(maps.Keys(exe.Children)) {
		cs := exe.Children[id]
		if cs.Finished {
			continue
		}
		if op == OpCancel {
			// The parent records the child it cancels as finished, as the engine does for the
			// regions it leaves: nothing joins it any more.
			cs.Finished, cs.Outcome = true, chart.OutcomeCancelled
			next.Children[id] = cs
		}
		b.Emits = append(b.Emits, stead.Emit{Target: id, Event: stead.Event{ID: ev.ID, Kind: cascade, CreatedAt: now}})
	}
	b.Trace = &stead.TraceStep{EventID: ev.ID, EventKind: ev.Kind, From: exe.ActivePath, To: next.ActivePath, At: now}
	return next, b, nil
}

// maxControlAttempts bounds how often a command is computed again after a step committed first.
const maxControlAttempts = 32

// control applies the control event ev to execution id: it loads the execution together with
// "was ev applied?", computes the command, and commits it by compare-and-swap with ev.ID as the
// processed marker — the same path as any step — reloading and computing again when a step
// committed first. Then it delivers what the command emitted: control events that cascade to
// children are applied to them the same way, the rest is published. A repeat (ev applied before)
// writes nothing and delivers what is left in the execution's outbox.
//
// With dry set it goes as far as the commit and stops there: the same load and the same checks
// (checkCommand), so that a dry run says "would apply" exactly where the command applies and
// refuses with the same error; it writes and delivers nothing, and computes nothing that runs an
// action (reset, set-state and retry run entry and exit actions).
func (r *relay) control(ctx context.Context, id string, ev stead.Event, dry bool) (Outcome, error) {
	for attempt := 1; ; attempt++ {
		exe, processed, err := r.store.LoadForEvent(ctx, id, ev.ID)
		if err != nil {
			return Outcome{}, err
		}
		out := Outcome{ExecutionID: id, CommandID: ev.ID, Status: exe.Status, Version: exe.Version}
		if processed {
			out.Repeat = true
			if dry {
				return out, nil
			}
			if err := r.flush(ctx, exe); err != nil {
				r.log.Warn("delivery of a repeated command's leftovers deferred to the relay",
					slog.String("execution", id), slog.String("command", ev.ID), slog.Any("err", err))
			}
			return out, nil
		}
		m := r.machines[exe.DefinitionID]
		if dry {
			op := opOf(ev.Kind)
			if op == "" {
				return out, check.Invalidf("%q is not a control event", ev.Kind)
			}
			_, err := checkCommand(exe, op, ev, m)
			return out, err
		}
		next, b, err := applyCommand(exe, ev, m, r.clock())
		if err != nil {
			return out, err
		}
		done, err := r.store.Commit(ctx, next, b)
		if errors.Is(err, stead.ErrConflict) && attempt < maxControlAttempts {
			// A step (or another command) committed first: compute the command again on what it
			// left, after a pause that grows, so that two commands racing do not meet again.
			if attempt > 2 {
				sleep(ctx, time.Duration(rand.IntN(attempt))*time.Millisecond)
			}
			continue
		}
		if err != nil {
			return out, err
		}
		next.Version = done.Version
		r.report(next, ev, true)
		if err := r.deliver(ctx, []delivery{{exe: next, b: &b, seqs: done.Seqs, ev: ev}}); err != nil {
			r.log.Warn("delivery of a command deferred to the relay",
				slog.String("execution", id), slog.String("command", ev.ID), slog.Any("err", err))
		}
		out.Status, out.Version = next.Status, next.Version
		return out, nil
	}
}

// controlEmit is a control event in the outbox, addressed to a child.
type controlEmit struct {
	source, target string
	ev             stead.Event
	seq            int64 // its outbox row; 0 when it has none
}

// applyControls applies cascaded control events to their targets and returns the outbox rows
// that are settled: applied, or refused by a target that has ended (nothing to do), or addressed
// to an execution that does not exist and will not (no spawn intent of its parent names it). A
// target not created yet keeps its row, for the relay to apply once the child exists.
func (r *relay) applyControls(ctx context.Context, cs []controlEmit) ([]int64, error) {
	var done []int64
	var errs []error
	settle := func(c controlEmit) {
		if c.seq > 0 {
			done = append(done, c.seq)
		}
	}
	for _, c := range cs {
		_, err := r.control(ctx, c.target, c.ev, false)
		switch {
		case err == nil:
			settle(c)
		case errors.Is(err, stead.ErrInvalid):
			// The child's status does not take it (it ended, or a cancel drains it already).
			r.log.Debug("cascaded command refused", slog.String("execution", c.target), slog.String("command", c.ev.ID), slog.Any("err", err))
			settle(c)
		case errors.Is(err, stead.ErrNotFound):
			pending, perr := r.spawnPending(ctx, c.source, c.target)
			switch {
			case perr != nil:
				errs = append(errs, perr)
			case !pending:
				settle(c) // purged, or never created: nobody left to command
			}
		default:
			errs = append(errs, fmt.Errorf("%s to %q: %w", c.ev.Kind, c.target, err))
		}
	}
	return done, errors.Join(errs...)
}

// spawnPending reports whether parent still has a spawn intent for child.
func (r *relay) spawnPending(ctx context.Context, parent, child string) (bool, error) {
	es, err := r.store.PendingSpawns(ctx, parent, stead.MaxListLimit)
	if err != nil {
		return false, fmt.Errorf("pending spawns of %q: %w", parent, err)
	}
	return slices.ContainsFunc(es, func(e stead.SpawnEntry) bool { return e.ChildID == child }), nil
}

// flush delivers what exe left in the store: its spawn intents and outbox rows, which a command
// applied by a process that died before delivering them leaves behind. The relay of any worker
// delivers them too, later; a row delivered twice is absorbed by dedupe.
func (r *relay) flush(ctx context.Context, exe *stead.Execution) error {
	kids, err := r.spawnChildren(ctx, []delivery{{exe: exe, trace: r.trace(ctx)}})
	if len(kids) > 0 {
		err = errors.Join(err, r.deliver(ctx, kids))
	}
	entries, perr := r.store.PendingOutbox(ctx, exe.ID, stead.MaxListLimit)
	if perr != nil {
		return errors.Join(err, perr)
	}
	_, rerr := r.relayEntries(ctx, entries, map[string]int{exe.ID: exe.Priority})
	return errors.Join(err, rerr)
}

// relayEntries delivers outbox rows: a control event is applied to its target, every other event
// published; it acknowledges the rows that are settled and returns how many.
func (r *relay) relayEntries(ctx context.Context, entries []stead.OutboxEntry, priority map[string]int) (int, error) {
	out := make([]transport.Outgoing, 0, len(entries))
	seqs := make([]int64, 0, len(entries))
	var controls []controlEmit
	for _, e := range entries {
		rt := routeOf(stead.Emit{Target: e.Target, Event: e.Event})
		if rt == routeRelay {
			controls = append(controls, controlEmit{source: e.Source, target: e.Target, ev: e.Event, seq: e.Seq})
			continue
		}
		seqs = append(seqs, e.Seq)
		if rt == routeNowhere {
			continue
		}
		p, err := r.priorityOf(ctx, priority, e.Target)
		if err != nil {
			return 0, err
		}
		o := transport.Outgoing{Group: e.Target, Event: e.Event, Priority: p}
		if e.Event.Kind == chart.KindStart {
			// A start its creator could not publish: it carries the execution's limit.
			exe, err := r.store.Load(ctx, e.Target)
			if err != nil && !errors.Is(err, stead.ErrNotFound) {
				return 0, fmt.Errorf("load %q for its limit: %w", e.Target, err)
			}
			if exe != nil {
				o.Flow = flowOf(r.machines, exe)
			}
		}
		out = append(out, o)
	}
	applied, cerr := r.applyControls(ctx, controls)
	if len(out) > 0 {
		if err := r.tr.PublishBatch(ctx, out); err != nil {
			seqs = nil // left for a later pass
			cerr = errors.Join(cerr, fmt.Errorf("publish: %w", err))
		}
	}
	seqs = append(seqs, applied...)
	if len(seqs) > 0 {
		if err := r.store.AckOutbox(ctx, seqs); err != nil {
			return 0, errors.Join(cerr, fmt.Errorf("ack outbox: %w", err))
		}
	}
	return len(seqs), cerr
}
