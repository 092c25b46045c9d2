package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/transport"
)

// Worker runs executions: it claims events from the transport, steps the executions they address,
// commits, relays what the steps produced, sweeps due timers and delivers leftovers of crashed
// workers. Create it with New and start it with Run.
type Worker struct {
	cfg     Config
	store   *stead.Store
	tr      *transport.Transport
	log     *slog.Logger
	retries *settler   // acks and nacks that failed, retried until their lease ends
	obs     *watch     // nil: no Observer
	slots   slots      // places for steps running at once (MaxWorkers), shared by the loops
	beats   *heartbeat // the leases of running steps; nil when the transport cannot extend
	relay   *relay     // delivers what steps and commands produce, shared with Client's way
	limits  bool       // a machine's definition declares a chart.Limit
	forgets forgetter  // finished limited executions whose keys the transport may forget
	tails   sync.WaitGroup
}

// New validates cfg, applies the defaults and returns a worker ready to Run.
func New(cfg Config) (*Worker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	obs := newWatch(cfg)
	w := &Worker{cfg: cfg, store: cfg.Store, tr: cfg.Transport,
		log: cfg.Logger.With(slog.String("worker", cfg.Name)), retries: newSettler(), obs: obs,
		slots: newSlots(cfg.MaxWorkers), limits: limited(cfg.Machines)}
	if w.limits && !cfg.Transport.CanLimit() {
		return nil, fmt.Errorf("worker: a definition declares a limit, which this transport cannot enforce: %w", errors.ErrUnsupported)
	}
	w.relay = &relay{store: w.store, tr: w.tr, machines: cfg.Machines, clock: cfg.Clock, log: w.log,
		obs: obs, step: w.step, committed: w.committed}
	w.relay.stamper, _ = cfg.Observer.(Stamper)
	if cfg.Transport.CanExtend() {
		var maxAge time.Duration
		if cfg.ActionTimeout > 0 {
			maxAge = 2*cfg.ActionTimeout + cfg.Visibility
		}
		w.beats = newHeartbeat(cfg.Visibility, maxAge)
	}
	return w, nil
}

// Run works until ctx is done, then stops claiming, lets the steps in flight finish (bounded by
// ShutdownTimeout) and returns nil. It first delivers leftovers of earlier runs (recovery).
// Failures of the store or the transport while running are logged and retried after
// RetryDelay, never returned: a worker outlives an outage of its database.
func (w *Worker) Run(ctx context.Context) error {
	// In-flight work runs on a context that outlives ctx by at most ShutdownTimeout, so a stop
	// request never cuts a step between its commit and its acknowledgements.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	var grace *time.Timer
	var graceMu sync.Mutex
	stopGrace := context.AfterFunc(ctx, func() {
		graceMu.Lock()
		grace = time.AfterFunc(w.cfg.ShutdownTimeout, cancelWork)
		graceMu.Unlock()
	})
	defer func() {
		stopGrace()
		graceMu.Lock()
		if grace != nil {
			grace.Stop()
		}
		graceMu.Unlock()
	}()

	if w.obs != nil {
		if stop, err := w.obs.o.Run(w.store, w.tr); err != nil {
			w.log.Warn("observer not running", slog.Any("err", err))
		} else if stop != nil {
			defer stop()
		}
	}
	w.log.Info("worker starting", slog.Int("concurrency", w.cfg.Concurrency),
		slog.Int("batch", w.cfg.BatchSize), slog.Bool("shared_tx", w.cfg.SharedTx != nil))
	if n, err := w.Recover(work); err != nil {
		w.log.Warn("recovery incomplete; the periodic relay will retry", slog.Any("err", err))
	} else if n > 0 {
		w.log.Info("recovered leftovers", slog.Int("delivered", n))
	}

	// The settler retries failed acks and nacks while the loops run and stops after them.
	settleCtx, stopSettler := context.WithCancel(work)
	var settling sync.WaitGroup
	settling.Go(func() { w.runSettler(settleCtx) })
	defer func() { stopSettler(); settling.Wait() }()
	if w.beats != nil {
		// The heartbeat outlives the loops: steps still running at shutdown keep their leases.
		beatCtx, stopBeats := context.WithCancel(work)
		settling.Go(func() { w.beats.run(beatCtx, w.tr, w.log) })
		defer stopBeats()
	} else {
		w.log.Info("the transport cannot extend leases: a step must end within Visibility")
	}

	var wg sync.WaitGroup
	for i := 0; i < w.cfg.Concurrency; i++ {
		wg.Go(func() { w.loop(ctx, work) })
	}
	if w.cfg.TimerInterval > 0 {
		wg.Go(func() {
			w.every(ctx, w.cfg.TimerInterval, func() {
				if _, err := w.SweepTimers(work); err != nil {
					w.log.Warn("timer sweep failed", slog.Any("err", err))
				}
			})
		})
	}
	if w.cfg.RelayInterval > 0 {
		wg.Go(func() {
			w.every(ctx, w.cfg.RelayInterval, func() {
				if _, err := w.Recover(work); err != nil {
					w.log.Warn("relay failed", slog.Any("err", err))
				}
			})
		})
	}
	if w.limits {
		wg.Go(func() { w.every(ctx, forgetInterval, func() { w.forget(work) }) })
	}
	wg.Wait()
	w.tails.Wait() // the batches whose slow steps outlived their loop's turn
	if w.limits {
		w.forget(work)
	}
	w.log.Info("worker stopped")
	return nil
}

func (w *Worker) every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// loop claims and handles work until ctx is done. Claims and handling use work, so a stop never
// abandons a claimed message half-way. After a failed claim it pauses before the next (see
// claimBackoff), so that a fleet reconnects within moments of its database coming back, without
// all of it retrying in step.
func (w *Worker) loop(ctx, work context.Context) {
	failures := 0
	for ctx.Err() == nil {
		n, err := w.batch(ctx, work)
		if err != nil {
			failures++
			w.log.Warn("claim failed", slog.Int("failures", failures), slog.Any("err", err))
			sleep(ctx, claimBackoff(failures, w.cfg.RetryDelay))
			continue
		}
		failures = 0
		if n == 0 {
			w.idle(ctx)
		}
	}
}

// idle waits until the transport signals new work, IdleWait passes or ctx is done.
func (w *Worker) idle(ctx context.Context) {
	wctx, cancel := context.WithTimeout(ctx, w.cfg.IdleWait)
	defer cancel()
	_ = w.tr.Wait(wctx)
}

// claimBackoff is the pause after the n-th failed claim in a row: 100 ms doubled per failure up
// to RetryDelay, then jittered down by up to half. It stays at or under RetryDelay, so after an
// outage a loop claims again at most RetryDelay after the database is back.
func claimBackoff(n int, retryDelay time.Duration) time.Duration {
	d := min(100*time.Millisecond<<min(n-1, 10), retryDelay)
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// verdict is what to do with a claimed message before (or instead of) stepping it.
type verdict int

const (
	doStep   verdict = iota
	doAck            // drop it: nothing to do, ever
	doPark           // nack with SuspendRecheck
	doRetry          // nack with RetryDelay
	doResend         // nack with no delay (lost CAS)
)

// admit applies the checks that run before a step, in this order: a missing execution or an event
// it already applied is dropped (that is the dedupe); a cancelled execution drops everything; a
// suspended one parks the message; a cancelling one drains its backlog until the cancel event.
// A pending one takes every event: step applies its start first when the event is not the start
// itself (see step), so an event that overtook the start is never dropped.
func (w *Worker) admit(exe *stead.Execution, processed bool, ev stead.Event) (verdict, string) {
	switch {
	case exe == nil:
		return doAck, "no such execution"
	case processed:
		return doAck, "already processed"
	case exe.Status == stead.StatusCancelled:
		return doAck, "execution cancelled"
	case exe.Status == stead.StatusSuspended:
		return doPark, "execution suspended"
	case exe.Status == stead.StatusCancelling && ev.Kind != chart.KindCancel:
		return doAck, "execution cancelling"
	}
	return doStep, ""
}

// startsFirst reports whether stepping ev on exe must apply exe's start event first: exe is
// pending, its start was never applied (a start that failed and is being retried leaves the retry
// timer armed, and the engine holds later events behind that retry), and ev is neither the start
// nor a cancel (which ends a pending execution as it is).
//
// Why the worker starts it instead of waiting for the start: the start event commits in the
// outbox with the execution and is published after the commit, so an event sent meanwhile — or
// one sent after a create whose publish failed, which leaves the start to the relay — can reach
// the execution's queue first. Parking that event would hold the queue's head for ever (the
// start, queued behind it, could never pass), and acknowledging it unapplied would lose an event
// the sender was told was accepted. The start carries no data and a fixed id (StartEventID), so
// the worker can apply exactly the start the sender would have; the published one is then
// dropped as already processed.
func startsFirst(exe *stead.Execution, ev stead.Event) bool {
	if exe.Status != stead.StatusPending || ev.Kind == chart.KindStart || ev.Kind == chart.KindCancel {
		return false
	}
	_, retrying := exe.Timers[chart.RetryTimerPath]
	return !retrying
}

// startEvent is the start event of exe as Client.Create and the relay send it, for startsFirst.
func startEvent(exe *stead.Execution) stead.Event {
	return stead.Event{ID: StartEventID(exe.ID), Kind: chart.KindStart, CreatedAt: exe.CreatedAt}
}

// step runs the execution's machine for ev. When ev overtook the execution's start (startsFirst),
// it applies the start and then ev from the state the start left, as a chain of two: one bundle
// with the start as ProcessedEventID and ev in AlsoProcessed, each step at the version it would
// have had alone. An execution that records its trace ring keeps ev's entry (one entry a commit).
//
// ctx is the context of the step's actions (see stepOnce).
func (w *Worker) step(ctx context.Context, exe *stead.Execution, ev stead.Event) (*stead.Execution, stead.Bundle, error) {
	if !startsFirst(exe, ev) {
		return w.stepOnce(ctx, exe, ev)
	}
	start := startEvent(exe)
	started, b, err := w.stepOnce(ctx, exe, start)
	if err != nil {
		return nil, b, err
	}
	if b.ProcessedEventID == "" {
		b.ProcessedEventID = start.ID // AlsoProcessed below requires it
	}
	version := exe.Version
	started.Version = version + 1
	next, b2, err := w.stepOnce(ctx, started, ev)
	if err != nil {
		return nil, b, err
	}
	next.Version = version // what the commit expects
	trace := b.Trace
	if b2.Trace != nil {
		trace = b2.Trace
	}
	b = mergeBundles(b, b2, ev.ID)
	b.Trace = trace
	return next, b, nil
}

// stepOnce runs the execution's machine (runMachine). A ContextMachine's actions get ctx, cut at
// ActionTimeout: ctx ends when the worker's ShutdownTimeout has passed (or a shared
// transaction's deadline), never merely because a stop was asked for.
func (w *Worker) stepOnce(ctx context.Context, exe *stead.Execution, ev stead.Event) (*stead.Execution, stead.Bundle, error) {
	now := w.cfg.Clock()
	next, b, err := runMachine(ctx, w.cfg.Machines, now, w.cfg.ActionTimeout, exe, ev)
	if err == nil && exe.Status == stead.StatusCancelling && ev.Kind == chart.KindCancel && !next.Status.Finished() {
		// The cancel's own event ends an operator's cancel, whether the machine knows it or not.
		next.Status, next.FinishedAt = stead.StatusCancelled, now
	}
	return next, b, err
}

// runMachine runs the machine of exe's definition for ev at now, turning a panic into an error
// so that one bad definition cannot take its caller down. A ContextMachine's actions get ctx,
// cut at timeout (0 or less: not cut).
func runMachine(ctx context.Context, machines Machines, now time.Time, timeout time.Duration, exe *stead.Execution, ev stead.Event) (next *stead.Execution, b stead.Bundle, err error) {
	m := machines[exe.DefinitionID]
	if m == nil {
		return nil, b, fmt.Errorf("worker: no machine for definition %q", exe.DefinitionID)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("worker: step of %q panicked: %v", exe.ID, p)
		}
	}()
	if cm, ok := m.(ContextMachine); ok {
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		next, b, err = cm.StepContext(ctx, exe, ev, now)
	} else {
		next, b, err = m.Step(exe, ev, now)
	}
	if err == nil && next == nil {
		err = fmt.Errorf("worker: step of %q returned no execution", exe.ID)
	}
	return next, b, err
}

// prioritised runs claim with the minimum priority the PriorityShare policy draws, and once more
// with none if that found nothing to claim.
func (w *Worker) prioritised(claim func(minPriority int) ([]transport.Lease, error)) ([]transport.Lease, error) {
	if w.cfg.PriorityShare > 0 && rand.Float64() < w.cfg.PriorityShare {
		ls, err := claim(w.cfg.PriorityThreshold)
		if err != nil || len(ls) > 0 {
			return ls, err
		}
	}
	return claim(0)
}

// committed is the one place every committed step is reported: OnCommit for each event the
// commit applied; an INFO line when it scheduled a retry; and, when the commit finished the
// execution, OnFinish and the log line, once.
// A commit that applied several events reports them in order with the same execution, so only
// the last one (last) finishes it.
func (w *Worker) committed(exe *stead.Execution, ev stead.Event, last bool) {
	if w.cfg.OnCommit != nil {
		w.cfg.OnCommit(exe, ev, time.Now())
	}
	if exe.Timers != nil {
		w.logRetry(exe, ev)
	}
	if !exe.Status.Finished() || !last {
		return
	}
	if exe.Status == stead.StatusFailed {
		warnFailed(w.log, exe, ev)
	} else if w.log.Enabled(context.Background(), slog.LevelDebug) {
		w.log.Debug("execution finished", slog.String("execution", exe.ID),
			slog.String("status", string(exe.Status)), slog.String("outcome", exe.Outcome))
	}
	if w.cfg.OnFinish != nil {
		w.cfg.OnFinish(exe.Clone())
	}
}

// warnFailed writes the WARN line of an execution that ev left failed, loud because a failed
// execution waits for an operator, who must hear of it: its state, the event and the error,
// taken from its dead letter when it has one (the event that failed it, not ev).
func warnFailed(log *slog.Logger, exe *stead.Execution, ev stead.Event) {
	state, event, kind := exe.ActivePath, ev.ID, ev.Kind
	if dl := exe.DeadLetter; dl != nil {
		state, event, kind = dl.ActivePath, dl.Event.ID, dl.Event.Kind
	}
	attrs := []any{slog.String("execution", exe.ID), slog.String("definition", exe.DefinitionID)}
	if state != "" { // empty when the event that failed it was its start
		attrs = append(attrs, slog.String("state", state))
	}
	attrs = append(attrs, slog.String("failed_in", exe.ActivePath), slog.String("event", event),
		slog.String("kind", kind), slog.String("err", exe.Error))
	log.Warn("execution failed", attrs...)
}

// committedAll reports every event a delivery's commit applied: the start the step applied first
// when its event overtook the start (step), the event, and the rest of its chain.
func (w *Worker) committedAll(d delivery) {
	if d.b != nil && d.b.ProcessedEventID != "" && d.b.ProcessedEventID != d.ev.ID {
		w.committed(d.exe, startEvent(d.exe), false)
	}
	w.committed(d.exe, d.ev, len(d.also) == 0)
	for i, ev := range d.also {
		w.committed(d.exe, ev, i == len(d.also)-1)
	}
}

// logRetry writes the INFO line of a step that failed an action with attempts left (a retry of
// chart.Retry): the engine discarded the step and armed the retry's timer. It is the step whose
// event waits at the head of Deferred, or the retry timer's own event when an attempt failed
// again; events that merely wait behind a pending retry are not it. The error itself is not in
// the execution until the last attempt fails it (the WARN line of committed).
func (w *Worker) logRetry(exe *stead.Execution, ev stead.Event) {
	at, ok := exe.Timers[chart.RetryTimerPath]
	if !ok || exe.Status.Finished() || len(exe.Deferred) == 0 {
		return
	}
	held := exe.Deferred[0]
	if held.ID != ev.ID && !strings.HasPrefix(ev.ID, "timeout:"+exe.ID+":"+chart.RetryTimerPath+":") {
		return
	}
	w.log.Info("action failed; retrying", slog.String("execution", exe.ID),
		slog.String("definition", exe.DefinitionID), slog.String("state", exe.ActivePath),
		slog.String("event", held.ID), slog.String("kind", held.Kind),
		// chart counts the failed attempts under the retry timer's path in InvokeSeq.
		slog.Int("failed_attempts", exe.InvokeSeq[chart.RetryTimerPath]), slog.Time("retry_at", at))
}

// settle acknowledges or nacks a message that was not stepped.
func (w *Worker) settle(ctx context.Context, l *transport.Lease, v verdict) {
	if v == doAck {
		w.ack(ctx, []transport.Lease{*l})
		return
	}
	w.nack(ctx, l, w.delay(v))
}

// delay is how long a nacked message waits before redelivery.
func (w *Worker) delay(v verdict) time.Duration {
	switch v {
	case doPark:
		return w.cfg.SuspendRecheck
	case doResend:
		return 0
	}
	return w.cfg.RetryDelay
}
