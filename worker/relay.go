package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/transport"
)

// relay applies operators' commands and delivers what committed steps and commands left to
// deliver: it creates spawned children, publishes emits, applies commands cascading to children,
// and relays outbox rows. A Worker and a Client each run it with their own store, transport,
// machines and clock: a command applied by a Client and one cascading from a worker's step take
// the same path. It holds no state of its own between calls.
type relay struct {
	store    *stead.Store
	tr       *transport.Transport
	machines Machines
	clock    func() time.Time
	log      *slog.Logger
	// obs watches the relay's store and transport calls (nil: a Client's, watched by nobody).
	obs *watch
	// stamper names the trace of a command's ctx, for the children it spawns; nil: none.
	stamper Stamper
	// step runs a child's start event (a Worker's step, bounded by its ActionTimeout); nil runs
	// the machine with no bound of its own.
	step func(ctx context.Context, exe *stead.Execution, ev stead.Event) (*stead.Execution, stead.Bundle, error)
	// committed reports each execution the relay committed (a command's target, a child it
	// created), as a Worker reports its steps; nil reports nothing.
	committed func(exe *stead.Execution, ev stead.Event, last bool)
}

// deliver is the worker's way into relay.deliver, for the step paths.
func (w *Worker) deliver(ctx context.Context, ds []delivery) error { return w.relay.deliver(ctx, ds) }

// trace returns the Event.Trace of ctx, "" without a stamper.
func (r *relay) trace(ctx context.Context) string {
	if r.stamper == nil {
		return ""
	}
	return r.stamper.Trace(ctx)
}

// report calls the committed hook, if any.
func (r *relay) report(exe *stead.Execution, ev stead.Event, last bool) {
	if r.committed != nil {
		r.committed(exe, ev, last)
	}
}

// runStep runs a child's start: through the step hook when set, else through runMachine alone.
func (r *relay) runStep(ctx context.Context, exe *stead.Execution, ev stead.Event) (*stead.Execution, stead.Bundle, error) {
	if r.step != nil {
		return r.step(ctx, exe, ev)
	}
	return runMachine(ctx, r.machines, r.clock(), 0, exe, ev)
}

// delivery is one committed step whose spawns and emits are still to be relayed.
type delivery struct {
	exe  *stead.Execution
	b    *stead.Bundle
	seqs []int64 // the outbox sequence numbers Commit returned for b.Emits
	ev   stead.Event
	// also are the further events a chain applied with ev (see plan), in order.
	also []stead.Event
	// trace is the Event.Trace of the step's span (empty untraced): the start events of the
	// children it spawned carry it.
	trace string
}

// deliver relays committed steps: it creates their spawned children first (an event a parent
// addresses to a child must not overtake the child's creation), generation by generation, then
// publishes the emits of the steps and of the children in one batch and acknowledges exactly
// those outbox rows. On error the rows stay in the store and the relay delivers them later.
func (r *relay) deliver(ctx context.Context, ds []delivery) error {
	var errs []error
	all := ds
	for gen := ds; len(gen) > 0; {
		var spawning []delivery
		for _, d := range gen {
			if len(d.b.Spawns) > 0 {
				spawning = append(spawning, d)
			}
		}
		if len(spawning) == 0 {
			break
		}
		kids, err := r.spawnChildren(ctx, spawning)
		if err != nil {
			errs = append(errs, err)
		}
		all = append(all, kids...)
		gen = kids
	}
	var out []transport.Outgoing
	var seqs []int64
	var controls []controlEmit
	for _, d := range all {
		for i, e := range d.b.Emits {
			var seq int64
			if i < len(d.seqs) {
				seq = d.seqs[i]
			}
			switch o, rt := route(r.machines, d.exe, e); rt {
			case routeRelay:
				// A command cascading to a child is applied to it, not queued behind its backlog.
				controls = append(controls, controlEmit{source: d.exe.ID, target: e.Target, ev: e.Event, seq: seq})
				continue
			case routePublish:
				out = append(out, o)
			}
			if seq > 0 {
				seqs = append(seqs, seq)
			}
		}
	}
	if len(controls) > 0 {
		applied, err := r.applyControls(ctx, controls)
		if err != nil {
			errs = append(errs, err)
		}
		if len(applied) > 0 {
			if err := r.store.AckOutbox(ctx, applied); err != nil {
				errs = append(errs, fmt.Errorf("ack outbox: %w", err))
			}
		}
	}
	for len(out) > 0 {
		n := min(len(out), transport.MaxBatch)
		pctx, end := r.obs.transport(ctx, "PublishBatch", n)
		err := r.tr.PublishBatch(pctx, out[:n])
		done(end, err)
		if err != nil {
			return errors.Join(append(errs, fmt.Errorf("publish: %w", err))...)
		}
		out = out[n:]
	}
	if len(seqs) > 0 {
		actx, end := r.obs.store(ctx, "AckOutbox", "stead_outbox", len(seqs))
		err := r.store.AckOutbox(actx, seqs)
		done(end, err)
		if err != nil {
			errs = append(errs, fmt.Errorf("ack outbox: %w", err))
		}
	}
	return errors.Join(errs...)
}

// spawnChildren creates the children the parents' steps asked for, acknowledges the intents, and
// returns the children's own committed starts for relaying.
func (r *relay) spawnChildren(ctx context.Context, parents []delivery) ([]delivery, error) {
	var entries []stead.SpawnEntry
	byID := make(map[string]*stead.Execution, len(parents))
	var traces map[string]string
	for _, d := range parents {
		p := d.exe
		es, err := r.store.PendingSpawns(ctx, p.ID, stead.MaxListLimit)
		if err != nil {
			return nil, fmt.Errorf("pending spawns of %q: %w", p.ID, err)
		}
		entries = append(entries, es...)
		byID[p.ID] = p
		if d.trace != "" {
			if traces == nil {
				traces = make(map[string]string, len(parents))
			}
			traces[p.ID] = d.trace
		}
	}
	kids, done, err := r.startChildren(ctx, entries, func(id string) *stead.Execution { return byID[id] }, traces)
	if len(done) > 0 {
		if aerr := r.store.AckSpawns(ctx, done); aerr != nil {
			err = errors.Join(err, fmt.Errorf("ack spawns: %w", aerr))
		}
	}
	return kids, err
}

// StartEventID is the id of the start event of an execution: stable, so that a start delivered
// twice (by the sender and by the relay) is applied once.
func StartEventID(executionID string) string { return "start:" + executionID }

// startChildren creates and starts the children that spawn intents describe, committing them
// together. Creation is idempotent: a child is committed at version 0, and a conflict means it
// exists already. It returns the deliveries of the children it created and the sequence numbers
// of the intents that are settled (created, already existing, or orphaned by a purged parent).
// A child's start event carries the trace context its spawn intent keeps (the spawning step's),
// so the child's first step joins the parent's trace whoever creates it; traces, by parent id
// (nil for none), stands in for an intent that keeps none (one a command left behind). The start
// step's own emits and spawns carry the same context on.
func (r *relay) startChildren(ctx context.Context, entries []stead.SpawnEntry, parentOf func(string) *stead.Execution, traces map[string]string) ([]delivery, []int64, error) {
	var errs []error
	var done []int64
	var items []stead.CommitItem
	var events []stead.Event
	var seqs []int64
	for _, s := range entries {
		parent := parentOf(s.ParentID)
		if parent == nil {
			// The parent was purged: nobody is left to join the child.
			r.log.Warn("dropping the spawn of a missing parent", slog.String("parent", s.ParentID), slog.String("child", s.ChildID))
			done = append(done, s.Seq)
			continue
		}
		if parent.Status == stead.StatusCancelling || parent.Status == stead.StatusCancelled {
			// Cancelled before its child was created: the child would only be cancelled in turn.
			r.log.Debug("dropping the spawn of a cancelled parent", slog.String("parent", s.ParentID), slog.String("child", s.ChildID))
			done = append(done, s.Seq)
			continue
		}
		// A region child runs its parent's definition from its region; an invoked one runs the
		// definition its spawn names, from the top.
		def, root := chart.SpawnTarget(parent.DefinitionID, s.RootPath)
		def = r.machines.Resolve(def) // an invoke without a version runs the newest
		child := &stead.Execution{
			ID: s.ChildID, DefinitionID: def, Status: stead.StatusPending,
			Context: s.Context, ParentID: s.ParentID, ChildID: s.ChildID, RootPath: root,
			Priority: parent.Priority,
		}
		tr := s.Trace
		if tr == "" {
			tr = traces[s.ParentID]
		}
		ev := stead.Event{ID: StartEventID(child.ID), Kind: chart.KindStart, CreatedAt: r.clock(), Trace: tr}
		next, b, err := r.runStep(ctx, child, ev)
		if err != nil {
			errs = append(errs, fmt.Errorf("start child %q: %w", child.ID, err))
			continue
		}
		stampBundle(&b, tr)
		keepTimerTraces(next, &b, tr)
		if parent.Status == stead.StatusSuspended && next.Status == stead.StatusRunning {
			// Created while its parent is suspended (the suspend's cascade found no child yet):
			// it starts suspended with it.
			next.Status = stead.StatusSuspended
		}
		items = append(items, stead.CommitItem{Execution: next, Bundle: b})
		events = append(events, ev)
		seqs = append(seqs, s.Seq)
	}
	var kids []delivery
	for lo := 0; lo < len(items); lo += stead.MaxBatch {
		hi := min(lo+stead.MaxBatch, len(items))
		results, err := r.store.CommitBatch(ctx, items[lo:hi])
		if err != nil {
			errs = append(errs, fmt.Errorf("create children: %w", err))
			continue
		}
		for k, res := range results {
			i := lo + k
			switch {
			case res.Err == nil:
				items[i].Execution.Version = res.Version
				r.report(items[i].Execution, events[i], true)
				kids = append(kids, delivery{exe: items[i].Execution, b: &items[i].Bundle, seqs: res.Seqs, ev: events[i]})
				done = append(done, seqs[i])
			case errors.Is(res.Err, stead.ErrConflict):
				done = append(done, seqs[i]) // it exists: an earlier delivery created it
			default:
				errs = append(errs, fmt.Errorf("create child %q: %w", items[i].Execution.ID, res.Err))
			}
		}
	}
	return kids, done, errors.Join(errs...)
}

// Recover delivers leftovers: spawn intents and outbox rows that no worker relayed, because one
// crashed between a commit and its relay or because a sender's publish failed. Rows are claimed
// with RelayLease, so workers on many hosts share them without handing one out twice at once. It
// returns how many rows it delivered. Run calls it on start and every RelayInterval.
func (w *Worker) Recover(ctx context.Context) (int, error) {
	n, err := w.recoverSpawns(ctx)
	m, err2 := w.recoverOutbox(ctx)
	return n + m, errors.Join(err, err2)
}

func (w *Worker) recoverSpawns(ctx context.Context) (int, error) {
	r := w.relay
	total := 0
	parents := map[string]*stead.Execution{}
	for ctx.Err() == nil {
		entries, err := w.store.ClaimSpawns(ctx, w.cfg.Clock(), w.cfg.RelayLease, relayPage)
		if err != nil {
			return total, fmt.Errorf("claim spawns: %w", err)
		}
		var errs []error
		for _, s := range entries {
			if _, ok := parents[s.ParentID]; ok {
				continue
			}
			parent, err := w.store.Load(ctx, s.ParentID)
			if errors.Is(err, stead.ErrNotFound) {
				parent, err = nil, nil
			}
			if err != nil {
				return total, fmt.Errorf("load parent %q: %w", s.ParentID, err)
			}
			parents[s.ParentID] = parent
		}
		kids, done, err := r.startChildren(ctx, entries, func(id string) *stead.Execution { return parents[id] }, nil)
		if err != nil {
			errs = append(errs, err)
		}
		if len(kids) > 0 {
			if err := r.deliver(ctx, kids); err != nil {
				errs = append(errs, err)
			}
		}
		if len(done) > 0 {
			if err := w.store.AckSpawns(ctx, done); err != nil {
				errs = append(errs, fmt.Errorf("ack spawns: %w", err))
			}
		}
		total += len(done)
		if err := errors.Join(errs...); err != nil {
			return total, err
		}
		if len(entries) < relayPage {
			break
		}
	}
	return total, nil
}

func (w *Worker) recoverOutbox(ctx context.Context) (int, error) {
	r := w.relay
	total := 0
	priority := map[string]int{}
	for ctx.Err() == nil {
		entries, err := w.store.ClaimOutbox(ctx, w.cfg.Clock(), w.cfg.RelayLease, relayPage)
		if err != nil {
			return total, fmt.Errorf("claim outbox: %w", err)
		}
		if len(entries) == 0 {
			break
		}
		n, err := r.relayEntries(ctx, entries, priority)
		total += n
		if err != nil {
			return total, err
		}
		if len(entries) < relayPage {
			break
		}
	}
	return total, nil
}

// priorityOf returns the priority to publish to execution id with: its own, or 0 when it no
// longer exists. known holds the priorities already looked up in this pass, so that a page with
// many rows for one execution loads it once.
func (r *relay) priorityOf(ctx context.Context, known map[string]int, id string) (int, error) {
	if p, ok := known[id]; ok {
		return p, nil
	}
	p := 0
	exe, err := r.store.Load(ctx, id)
	switch {
	case err == nil:
		p = exe.Priority
	case !errors.Is(err, stead.ErrNotFound):
		return 0, fmt.Errorf("load %q for its priority: %w", id, err)
	}
	known[id] = p
	return p, nil
}

// targetOf returns execution id (nil when it no longer exists), loading it once per pass: known
// holds those already loaded.
func (r *relay) targetOf(ctx context.Context, known map[string]*stead.Execution, id string) (*stead.Execution, error) {
	if exe, ok := known[id]; ok {
		return exe, nil
	}
	exe, err := r.store.Load(ctx, id)
	switch {
	case errors.Is(err, stead.ErrNotFound):
		exe = nil
	case err != nil:
		return nil, fmt.Errorf("load %q for its timers: %w", id, err)
	}
	known[id] = exe
	return exe, nil
}

// SweepTimers publishes a timeout event for every due timer and then deletes the timer, only if
// its fire time is still the one read (a timer re-armed meanwhile survives). The timeout event id
// is stable, so two workers sweeping the same timer publish one effect. Run calls it every
// TimerInterval; it returns how many timers fired.
func (w *Worker) SweepTimers(ctx context.Context) (int, error) {
	r := w.relay
	total := 0
	targets := map[string]*stead.Execution{}
	for ctx.Err() == nil {
		due, err := w.store.DueTimers(ctx, w.cfg.Clock(), relayPage)
		if err != nil {
			return total, fmt.Errorf("due timers: %w", err)
		}
		if len(due) == 0 {
			return total, nil
		}
		out := make([]transport.Outgoing, 0, len(due))
		now := w.cfg.Clock()
		for _, t := range due {
			w.obs.timerFired(now, t.FireAt)
			exe, err := r.targetOf(ctx, targets, t.ExecutionID)
			if err != nil {
				return total, err
			}
			ev := chart.TimeoutEvent(t.ExecutionID, t.Path, t.FireAt)
			p := 0
			if exe != nil {
				// The timeout joins the trace of the step that armed the timer.
				p, ev.Trace = exe.Priority, exe.TimerTraces[t.Path]
			}
			out = append(out, transport.Outgoing{Group: t.ExecutionID, Event: ev, Priority: p})
		}
		// Publish before deleting: a crash in between republishes, and dedupe absorbs it.
		if err := w.tr.PublishBatch(ctx, out); err != nil {
			return total, fmt.Errorf("publish timeouts: %w", err)
		}
		for _, t := range due {
			if _, err := w.store.DeleteTimer(ctx, t); err != nil {
				return total, fmt.Errorf("delete timer: %w", err)
			}
		}
		total += len(due)
		w.log.Debug("timers fired", slog.Int("count", len(due)))
		if len(due) < relayPage {
			return total, nil
		}
	}
	return total, ctx.Err()
}
