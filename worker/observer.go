package worker

import (
	"context"
	"maps"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// Observer watches a worker at work: its batches and the steps in them, its calls to the store
// and the transport, its timers. Config.Observer takes one; nil watches nothing and costs the
// step path a nil check per hook. The worker knows nothing of how it is watched: package
// otelstead is the OpenTelemetry Observer (spans, metrics, gauges), kept apart so that a program
// without telemetry builds none of it.
//
// Every method is called from the worker's goroutines, concurrently: an Observer must be safe for
// concurrent use and quick.
type Observer interface {
	// Batch begins watching the messages of one claim (every claim is a batch, of one message
	// too). The context returned is what the batch's calls and steps run under (ctx itself, or
	// ctx with what the observer hangs them from).
	Batch(ctx context.Context, c Claim) (context.Context, BatchObserver)
	// Call begins a call to the store or the transport; the worker calls end with the call's
	// error when it returns. The context returned is what the call runs under.
	Call(ctx context.Context, c Call) (_ context.Context, end func(err error))
	// TimerFired tells how long after its fire time a due timer was published.
	TimerFired(late time.Duration)
	// Run is called as Worker.Run starts, with what the worker runs on, for what an observer
	// reads of the backends themselves (queue depth, backlogs); Run calls stop as it returns. An
	// error is logged, and the worker runs on.
	Run(store *stead.Store, tr *transport.Transport) (stop func(), err error)
}

// BatchObserver watches the messages of one batch, each by its index among the batch's leases.
// The steps of different executions run on goroutines of their own: the methods are called
// concurrently, but never for one message at once, and End after all the others.
type BatchObserver interface {
	// Loaded tells the execution message i was loaded to (nil: none), before its admission.
	Loaded(i int, exe *stead.Execution)
	// Outcome tells how message i ended so far (the last call wins; StepDropped until told) and, when
	// err is not nil, what kept its step from committing.
	Outcome(i int, o StepOutcome, err error)
	// Stepped tells that message i stepped to b (its outcome is StepCommitted until told
	// otherwise), and returns the Event.Trace to stamp on what b emits and spawns, and to keep
	// for the timers it arms ("": none).
	Stepped(i int, b *stead.Bundle) (trace string)
	// Committed tells the execution message i's step committed (Version and Status as stored).
	Committed(i int, exe *stead.Execution)
	// End ends the batch: every message has settled or been handed back.
	End()
}

// Claim describes the claim of a batch.
type Claim struct {
	// Leases are the messages claimed; they stay as they are until the BatchObserver's End.
	Leases []transport.Lease
	Start  time.Time // when the claim began
	// Alone reports a message claimed by an unbatched worker (BatchSize 1, no shared
	// transaction), whose step is all the claim does.
	Alone bool
	DB    string // the transport's database system, as Call.DB
}

// Call describes a call of the worker to its store or its transport.
type Call struct {
	Op         string // the method: "LoadForEvents", "CommitBatch", "AckBatch", "COMMIT" …
	Collection string // what it reads or writes: "stead_executions", "transport_messages" …
	N          int    // the items of a batch call (0 or 1: not a batch)
	// DB is the backend's database system ("postgresql", "sqlite"; see DBSystemNamer), or "".
	DB string
}

// StepOutcome is how a claimed message ended.
type StepOutcome string

// The outcomes of a claimed message.
const (
	StepCommitted   StepOutcome = "committed"    // the step committed
	StepConflict    StepOutcome = "conflict"     // it lost the compare-and-swap and is redelivered at once
	StepDuplicate   StepOutcome = "duplicate"    // the execution had applied the event already (a redelivery)
	StepDropped     StepOutcome = "dropped"      // nothing to do: no such execution, cancelled, not started …
	StepParked      StepOutcome = "parked"       // the execution is suspended
	StepActionError StepOutcome = "action_error" // the machine failed; retried after RetryDelay
	StepRetry       StepOutcome = "retry"        // the store failed; retried after RetryDelay
	// StepDeferred: claimed behind a message of its execution that was not applied in this
	// batch, and handed back with it, in order.
	StepDeferred StepOutcome = "deferred"
)

// A Stamper names the trace a context is part of, as an Event.Trace ("" for none): what
// Client.Send and Client.Create give the events they send, so that the steps these cause join
// the caller's trace. otelstead's Observer is one.
type Stamper interface {
	Trace(ctx context.Context) string
}

// DBSystemNamer is what a backend implements to name its database to an Observer (Call.DB; the
// semantic conventions' db.system.name: "postgresql", "sqlite"). It is optional.
type DBSystemNamer interface {
	DBSystemName() string
}

func dbSystem(v any) string {
	if n, ok := v.(DBSystemNamer); ok {
		return n.DBSystemName()
	}
	return ""
}

// watch is the worker's side of its Observer: nil when there is none, and then every method
// returns at once, so that the step path pays a branch per hook and allocates nothing.
type watch struct {
	o                    Observer
	storeDB, transportDB string
}

func newWatch(cfg Config) *watch {
	if cfg.Observer == nil {
		return nil
	}
	w := &watch{o: cfg.Observer, storeDB: dbSystem(cfg.Store.Backend()), transportDB: dbSystem(cfg.Transport.Backend())}
	if cfg.SharedTx != nil {
		w.storeDB = dbSystem(cfg.SharedTx)
		w.transportDB = w.storeDB
	}
	return w
}

// now is the start of a claim, read only when something will use it.
func (w *watch) now() time.Time {
	if w == nil {
		return time.Time{}
	}
	return time.Now()
}

// store begins a store call; done ends it.
func (w *watch) store(ctx context.Context, op, collection string, n int) (context.Context, func(error)) {
	if w == nil {
		return ctx, nil
	}
	return w.call(ctx, op, collection, n, w.storeDB)
}

// transport begins a transport call; done ends it.
func (w *watch) transport(ctx context.Context, op string, n int) (context.Context, func(error)) {
	if w == nil {
		return ctx, nil
	}
	return w.call(ctx, op, "transport_messages", n, w.transportDB)
}

// call is the observed half of store and transport.
func (w *watch) call(ctx context.Context, op, collection string, n int, db string) (context.Context, func(error)) {
	return w.o.Call(ctx, Call{Op: op, Collection: collection, N: n, DB: db})
}

// done ends a call that store or transport began.
func done(end func(error), err error) {
	if end != nil {
		end(err)
	}
}

func (w *watch) timerFired(now, fireAt time.Time) {
	if w != nil {
		w.o.TimerFired(max(now.Sub(fireAt), 0))
	}
}

// carry returns to with the values of from (what the observer hangs calls from), so that work
// done on to's deadline (after a transaction's own has passed) is still seen as from's.
func (w *watch) carry(to, from context.Context) context.Context {
	if w == nil {
		return to
	}
	return carried{Context: to, values: from}
}

type carried struct {
	context.Context
	values context.Context
}

func (c carried) Value(key any) any { return c.values.Value(key) }

// batch begins watching a batch: nil when there is no observer.
func (w *watch) batch(ctx context.Context, leases []transport.Lease, claimStart time.Time, alone bool) (context.Context, *batchWatch) {
	if w == nil {
		return ctx, nil
	}
	return w.begin(ctx, leases, claimStart, alone)
}

// begin is the observed half of batch, apart so that batch's nil check inlines.
func (w *watch) begin(ctx context.Context, leases []transport.Lease, claimStart time.Time, alone bool) (context.Context, *batchWatch) {
	ctx, b := w.o.Batch(ctx, Claim{Leases: leases, Start: claimStart, Alone: alone, DB: w.transportDB})
	return ctx, &batchWatch{b: b, traces: make([]string, len(leases))}
}

// batchWatch is a batch's BatchObserver as the step path calls it, nil-safe, with the trace of
// each message's step, which its deliveries carry on.
type batchWatch struct {
	b      BatchObserver
	traces []string // by lease; each written by its chain's goroutine only
}

// loaded tells the observer what the store returned for message i and what admit made of it.
func (s *batchWatch) loaded(i int, exe *stead.Execution, processed bool, v verdict) {
	if s != nil {
		s.load(i, exe, processed, v)
	}
}

// load is the observed half of loaded, apart so that loaded's nil check inlines.
func (s *batchWatch) load(i int, exe *stead.Execution, processed bool, v verdict) {
	s.b.Loaded(i, exe)
	switch {
	case processed:
		s.b.Outcome(i, StepDuplicate, nil)
	case v == doPark:
		s.b.Outcome(i, StepParked, nil)
	case v == doAck:
		s.b.Outcome(i, StepDropped, nil)
	}
}

func (s *batchWatch) outcome(i int, o StepOutcome, err error) {
	if s != nil {
		s.b.Outcome(i, o, err)
	}
}

// stepped tells the observer of message i's step and stamps what b emits and spawns with the
// trace it names; it returns that trace, for the timers b arms.
func (s *batchWatch) stepped(i int, b *stead.Bundle) string {
	if s == nil {
		return ""
	}
	return s.step(i, b)
}

// step is the observed half of stepped, apart so that stepped's nil check inlines.
func (s *batchWatch) step(i int, b *stead.Bundle) string {
	tr := s.b.Stepped(i, b)
	s.traces[i] = tr
	stampBundle(b, tr)
	return tr
}

func (s *batchWatch) committed(i int, exe *stead.Execution) {
	if s != nil {
		s.b.Committed(i, exe)
	}
}

// traceOf returns the trace of message i's step ("" unobserved).
func (s *batchWatch) traceOf(i int) string {
	if s == nil || i < 0 || i >= len(s.traces) {
		return ""
	}
	return s.traces[i]
}

// setAll records one outcome, and err, for every message of the batch.
func (s *batchWatch) setAll(o StepOutcome, err error) {
	if s == nil {
		return
	}
	for i := range s.traces {
		s.b.Outcome(i, o, err)
	}
}

func (s *batchWatch) end() {
	if s != nil {
		s.b.End()
	}
}

// stampBundle gives the trace context tr to every emit and spawn of b that carries none: the
// spawn intent keeps it, so that the child's start event carries it whoever creates the child.
func stampBundle(b *stead.Bundle, tr string) {
	if tr == "" {
		return
	}
	for i := range b.Emits {
		if b.Emits[i].Event.Trace == "" {
			b.Emits[i].Event.Trace = tr
		}
	}
	for i := range b.Spawns {
		if b.Spawns[i].Trace == "" {
			b.Spawns[i].Trace = tr
		}
	}
}

// keepTimerTraces records on next, the execution a step returned, the trace context tr of that
// step (empty when untraced) for each timer the step arms, and forgets it for each timer the
// step disarms and for all of them once the execution is finished, so that a timeout joins the
// trace of the step that armed it. It follows the bundle's timer ops, which every Machine
// returns, not Execution.Timers, which a Machine need not keep. The map is copied before it
// changes: a machine may share it with the execution it was given.
func keepTimerTraces(next *stead.Execution, b *stead.Bundle, tr string) {
	if tr == "" && len(next.TimerTraces) == 0 {
		return
	}
	if next.Status.Finished() {
		next.TimerTraces = nil
		return
	}
	var m map[string]string
	edit := func() map[string]string {
		if m == nil {
			m = maps.Clone(next.TimerTraces)
			if m == nil {
				m = map[string]string{}
			}
		}
		return m
	}
	for _, op := range b.Timers {
		_, had := next.TimerTraces[op.Path]
		switch {
		case op.Action == stead.TimerSchedule && tr != "":
			edit()[op.Path] = tr
		case had || m != nil:
			delete(edit(), op.Path) // disarmed, or re-armed by an untraced step
		}
	}
	if m != nil {
		if len(m) == 0 {
			m = nil
		}
		next.TimerTraces = m
	}
}
