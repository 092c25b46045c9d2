package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
)

// Starter creates and starts an execution: *worker.Client is one. A taken id is
// ErrAlreadyExists; an execution returned together with an error is created all the same (its
// start was left to the relay).
type Starter interface {
	Create(ctx context.Context, definitionID, id string, data json.RawMessage) (*stead.Execution, error)
}

// Start is one execution a BatchStarter creates.
type Start struct {
	DefinitionID string
	ID           string
	Context      json.RawMessage
}

// BatchStarter is a Starter that creates many executions in one store transaction
// (schedule/schedworker makes one of a worker.Client). A Runner whose Starter is one starts the
// ticks of a round together. StartBatch reports, for each start in order, whether its
// execution exists now (created, or its id taken: the tick fired already); an error means
// none can be counted on.
type BatchStarter interface {
	Starter
	StartBatch(ctx context.Context, starts []Start) ([]bool, error)
}

// MaxStartBatch bounds the starts of one StartBatch (stead.MaxBatch).
const MaxStartBatch = stead.MaxBatch

// Loader loads an execution: *stead.Store is one.
type Loader interface {
	Load(ctx context.Context, id string) (*stead.Execution, error)
}

// DefaultConcurrency is how many due schedules a Runner fires at once unless told otherwise.
const DefaultConcurrency = 8

// DefaultPoll is how often a Runner looks for due schedules unless told otherwise.
const DefaultPoll = time.Second

// Runner fires the ticks of the schedules of a Store. Run as many as you like, in as many
// processes: a tick is claimed by a compare-and-swap on the schedule's next tick in the
// database, and the execution it starts has the id ExecutionID gives it, so that a tick is never
// started twice — not by two runners, not by one replaying a tick it started before it crashed.
type Runner struct {
	Schedules *Store
	Starter   Starter
	// Executions is where the overlap policy reads the status of the previous tick's
	// execution. Without it every schedule behaves as AllowAll.
	Executions Loader
	// Cancel cancels an execution, for CancelPrevious (worker.Client.Cancel). Without it
	// CancelPrevious behaves as AllowAll.
	Cancel func(ctx context.Context, executionID string) error
	// Clock is the time ticks are compared with (default time.Now).
	Clock func() time.Time
	// Poll is the longest pause between two looks for due schedules (default DefaultPoll). A
	// schedule due sooner is looked at when it is due.
	Poll time.Duration
	// Logger receives the ticks that failed to start (default slog.Default()).
	Logger *slog.Logger
	// Concurrency is how many due schedules a runner fires at once (default
	// DefaultConcurrency): a tick's start is a few round-trips, so one at a time would bound a
	// runner to a few hundred ticks a second.
	Concurrency int
	// Wait, when set, replaces the pause between two looks (a test's virtual clock).
	Wait func(ctx context.Context, d time.Duration) error
}

func (r *Runner) now() time.Time {
	if r.Clock != nil {
		return r.Clock().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}

// Run fires due ticks until ctx is done, then returns ctx's error. It starts no goroutine.
func (r *Runner) Run(ctx context.Context) error {
	poll := r.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	for {
		wait := poll
		soonest, err := r.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			r.logger().Warn("schedule: look for due ticks", slog.Any("err", err))
		}
		if !soonest.IsZero() {
			if d := soonest.Sub(r.now()); d < wait {
				wait = max(d, time.Millisecond)
			}
		}
		if err := r.pause(ctx, wait); err != nil {
			return err
		}
	}
}

func (r *Runner) pause(ctx context.Context, d time.Duration) error {
	if r.Wait != nil {
		return r.Wait(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// RunOnce fires what is due now, once per schedule, and returns when the next look is useful: the
// earliest time a schedule it saw will be due again (zero when it does not know).
func (r *Runner) RunOnce(ctx context.Context) (time.Time, error) {
	now := r.now()
	due, err := r.Schedules.Due(ctx, now, MaxList)
	if err != nil {
		return time.Time{}, err
	}
	// Runners that read the same due schedules at once would otherwise go down the list in step,
	// each starting the same tick only to find it taken: in a random order they mostly part.
	rand.Shuffle(len(due), func(i, j int) { due[i], due[j] = due[j], due[i] })
	var (
		mu      sync.Mutex
		soonest time.Time
		errs    []error
	)
	note := func(at time.Time, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
		}
		if !at.IsZero() && (soonest.IsZero() || at.Before(soonest)) {
			soonest = at
		}
	}
	bs, batched := r.Starter.(BatchStarter)
	if !batched {
		r.each(ctx, len(due), func(i int) { note(r.fire(ctx, due[i], now)) })
	} else {
		// Plan every schedule, start the ticks of the round in batches, then claim: the claim of
		// a tick still follows its start, and a start that failed is not claimed.
		plans := make([]plan, len(due))
		failed := make([]bool, len(due))
		r.each(ctx, len(due), func(i int) {
			var err error
			if plans[i], err = r.plan(ctx, due[i], now); err != nil {
				failed[i] = true
				note(time.Time{}, err)
			}
		})
		var idx []int
		for i, p := range plans {
			if !failed[i] && p.start {
				idx = append(idx, i)
			}
		}
		for len(idx) > 0 && ctx.Err() == nil {
			chunk := idx[:min(len(idx), MaxStartBatch)]
			idx = idx[len(chunk):]
			starts := make([]Start, len(chunk))
			for j, i := range chunk {
				starts[j] = Start{DefinitionID: plans[i].sc.DefinitionID, ID: plans[i].id, Context: plans[i].sc.Context}
			}
			exist, err := bs.StartBatch(ctx, starts)
			for j, i := range chunk {
				if err != nil || j >= len(exist) || !exist[j] {
					failed[i] = true
				}
			}
			if err != nil {
				note(time.Time{}, fmt.Errorf("schedule: start %d ticks: %w", len(chunk), err))
			}
		}
		r.each(ctx, len(due), func(i int) {
			if !failed[i] {
				note(r.claim(ctx, plans[i]))
			}
		})
	}
	if err := ctx.Err(); err != nil {
		return soonest, errors.Join(append(errs, err)...)
	}
	// A schedule this round did not fire (created, resumed or fired elsewhere since) may fall due
	// before the next poll: look ahead for the earliest, so that it is not a poll late.
	ahead, err := r.Schedules.Due(ctx, now.Add(r.pollOr()), 1)
	if err != nil {
		errs = append(errs, err)
	} else if len(ahead) == 1 && ahead[0].NextTick.After(now) && (soonest.IsZero() || ahead[0].NextTick.Before(soonest)) {
		soonest = ahead[0].NextTick
	}
	return soonest, errors.Join(errs...)
}

// each runs fn(0..n-1), up to Concurrency at once, and returns when every call has returned.
func (r *Runner) each(ctx context.Context, n int, fn func(i int)) {
	conc := r.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}

// plan is what a runner does with one due schedule: start the execution id (when start is
// set), then claim the tick with a (when claim is set); again is when to look at it next.
type plan struct {
	sc    *Schedule
	start bool
	id    string
	claim bool
	a     Advance
	again time.Time
}

// fire handles one due schedule: it plans, starts the execution, then claims the tick. Starting
// before claiming is what makes a crash between the two harmless: the runner that replays the
// tick finds its execution (ErrAlreadyExists) and only claims. It returns when the schedule
// should be looked at again.
func (r *Runner) fire(ctx context.Context, sc *Schedule, now time.Time) (time.Time, error) {
	p, err := r.plan(ctx, sc, now)
	if err != nil {
		return time.Time{}, err
	}
	if p.start {
		exe, err := r.Starter.Create(ctx, p.sc.DefinitionID, p.id, p.sc.Context)
		if err != nil && exe == nil && !errors.Is(err, stead.ErrAlreadyExists) {
			return time.Time{}, fmt.Errorf("schedule %q: start tick %s: %w", p.sc.ID, p.a.LastTick.Format(time.RFC3339Nano), err)
		}
	}
	return r.claim(ctx, p)
}

// plan picks the tick of sc the catch-up policy starts and applies the overlap policy to it.
func (r *Runner) plan(ctx context.Context, sc *Schedule, now time.Time) (plan, error) {
	// The due list may be stale by now: a racing runner may have claimed the tick. One read by
	// key is cheaper than a create that finds the id taken (which republishes the start of an
	// execution that has not begun), and correctness does not hang on it: the claim decides.
	cur, err := r.Schedules.Get(ctx, sc.ID)
	if errors.Is(err, stead.ErrNotFound) {
		return plan{sc: sc}, nil // deleted meanwhile
	}
	if err != nil {
		return plan{}, err
	}
	if cur.Paused || !cur.NextTick.Equal(sc.NextTick) {
		return plan{sc: cur, again: cur.NextTick}, nil
	}
	sc = cur
	sp, err := parseSpec(sc)
	if err != nil {
		return plan{}, err
	}
	tick := pick(sc, sp, now)
	var advanceTo time.Time
	if tick.IsZero() {
		advanceTo = sp.next(now)
	} else {
		if at := tick.Add(sc.jitter(tick)); at.After(now) {
			return plan{sc: sc, again: at}, nil // its jitter has not passed yet
		}
		advanceTo = sp.next(tick)
	}
	if advanceTo.IsZero() { // a cron expression with no date left: park it at the end of time
		advanceTo = check.MaxTime.Truncate(time.Second)
	}
	p := plan{sc: sc, claim: true, a: Advance{NextTick: advanceTo, UpdatedAt: now}, again: advanceTo}
	if !tick.IsZero() {
		verdict, err := r.overlap(ctx, sc)
		if err != nil {
			return plan{}, err
		}
		switch verdict {
		case hold:
			return plan{sc: sc, again: now.Add(r.pollOr())}, nil
		case run:
			p.start, p.id = true, ExecutionID(sc.ID, tick)
			p.a.Fired, p.a.LastTick, p.a.LastExecutionID = true, tick, p.id
		}
	}
	return p, nil
}

// claim claims the tick of p, if it has one to claim, and returns when to look again.
func (r *Runner) claim(ctx context.Context, p plan) (time.Time, error) {
	if !p.claim {
		return p.again, nil
	}
	if _, err := r.Schedules.Claim(ctx, p.sc.ID, p.sc.NextTick, p.a); err != nil {
		return time.Time{}, fmt.Errorf("schedule %q: claim: %w", p.sc.ID, err)
	}
	// Lost or won, the row has moved on: look again when its new next tick is due.
	return p.again, nil
}

func (r *Runner) pollOr() time.Duration {
	if r.Poll > 0 {
		return r.Poll
	}
	return DefaultPoll
}

// pick returns the tick of the due schedule sc that its catch-up policy starts now, or the zero
// time when it starts none (every due tick is dropped).
func pick(sc *Schedule, sp spec, now time.Time) time.Time {
	from := sc.NextTick
	edge := now.Add(-sc.CatchUpWindow)
	switch sc.CatchUp {
	case All:
		// The oldest due tick within the window; its successors come on the next rounds.
		if !from.Before(edge) {
			return from
		}
		t := sp.next(edge.Add(-time.Microsecond))
		if t.IsZero() || t.After(now) {
			return time.Time{}
		}
		return t
	case None:
		t := sp.latest(from, now)
		if t.Before(edge) {
			return time.Time{}
		}
		return t
	default: // Latest
		return sp.latest(from, now)
	}
}

type verdict int

const (
	run verdict = iota
	drop
	hold
)

// overlap applies sc's overlap policy to the execution its last tick started.
func (r *Runner) overlap(ctx context.Context, sc *Schedule) (verdict, error) {
	if sc.Overlap == AllowAll || sc.LastExecutionID == "" || r.Executions == nil {
		return run, nil
	}
	if sc.Overlap == CancelPrevious && r.Cancel == nil {
		return run, nil
	}
	exe, err := r.Executions.Load(ctx, sc.LastExecutionID)
	if errors.Is(err, stead.ErrNotFound) { // purged: it ended long ago
		return run, nil
	}
	if err != nil {
		return 0, fmt.Errorf("schedule %q: load previous execution: %w", sc.ID, err)
	}
	if exe.Status.Finished() {
		return run, nil
	}
	switch sc.Overlap {
	case Skip:
		// Said where an operator reads, since a skipped tick otherwise shows only as a gap.
		r.logger().Info("schedule: tick skipped: the previous tick's execution is still running",
			slog.String("schedule", sc.ID), slog.String("previous", sc.LastExecutionID))
		return drop, nil
	case BufferOne:
		return hold, nil
	default: // CancelPrevious
		if err := r.Cancel(ctx, sc.LastExecutionID); err != nil {
			return 0, fmt.Errorf("schedule %q: cancel previous execution %q: %w", sc.ID, sc.LastExecutionID, err)
		}
		return run, nil
	}
}

// Trigger starts an execution of the schedule now, outside its ticks: its id is
// ExecutionID(id, now) with "manual" in front of the time, and it changes neither the next tick
// nor the previous execution the overlap policy looks at.
func (r *Runner) Trigger(ctx context.Context, id string) (*stead.Execution, error) {
	sc, err := r.Schedules.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	exe, err := r.Starter.Create(ctx, sc.DefinitionID, sc.ID+"@manual-"+r.now().Format(time.RFC3339Nano), sc.Context)
	if exe != nil {
		return exe, nil
	}
	return nil, err
}

// MaxBackfill bounds the ticks one Backfill starts.
const MaxBackfill = 1000

// Backfill starts the schedule's ticks in [from, to) that have not started, whatever their age,
// pause or overlap policy, under the ids the runner gives them (so a tick that already fired is
// not started again), and returns the ids of those it started.
func (r *Runner) Backfill(ctx context.Context, id string, from, to time.Time) ([]string, error) {
	sc, err := r.Schedules.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	sp, err := parseSpec(sc)
	if err != nil {
		return nil, err
	}
	if !from.Before(to) {
		return nil, check.Invalidf("backfill of %q: from %s is not before to %s", id, from, to)
	}
	var ticks []time.Time
	for t := sp.next(from.Add(-time.Microsecond)); !t.IsZero() && t.Before(to); t = sp.next(t) {
		if len(ticks) == MaxBackfill {
			return nil, check.Invalidf("backfill of %q: more than %d ticks in the range", id, MaxBackfill)
		}
		ticks = append(ticks, t)
	}
	var started []string
	for _, t := range ticks {
		eid := ExecutionID(sc.ID, t)
		exe, err := r.Starter.Create(ctx, sc.DefinitionID, eid, sc.Context)
		if exe != nil {
			started = append(started, eid)
			continue
		}
		if !errors.Is(err, stead.ErrAlreadyExists) {
			return started, err
		}
	}
	return started, nil
}
