package steadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/worker"
)

// DefaultEpoch returns where a kit's virtual clock starts unless WithEpoch says otherwise,
// 2026-01-01T00:00:00Z: a fixed instant, so that timer fire times, trace times and timeout event
// ids are the same on every run.
func DefaultEpoch() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// DefaultSettleTimeout bounds, in real time, how long the kit waits for its worker to run out of
// work before it reports the flow as stuck (an action looping forever, two executions sending to
// each other without end).
const DefaultSettleTimeout = 10 * time.Second

// Option configures a Kit.
type Option func(*Kit)

// WithEpoch starts the virtual clock at t instead of DefaultEpoch.
func WithEpoch(t time.Time) Option {
	return func(k *Kit) { k.now = t.UTC().Truncate(time.Microsecond) }
}

// WithSettleTimeout sets how long, in real time, the kit waits for its worker to settle
// (default DefaultSettleTimeout; a duration that is not positive keeps the default).
func WithSettleTimeout(d time.Duration) Option {
	return func(k *Kit) {
		if d > 0 {
			k.settleTimeout = d
		}
	}
}

// WithLogger sets the logger of the kit's worker and client. The default writes warnings and
// errors (a failed execution, a failed step) to standard error and leaves out the worker's
// informational lines, which every test would otherwise print.
func WithLogger(l *slog.Logger) Option {
	return func(k *Kit) {
		if l != nil {
			k.log = l
		}
	}
}

// Kit runs statechart definitions with their real actions on the memory backend under a virtual
// clock. Register actions, guards and definitions first; the first call that needs the engine
// (Create, Send, Advance …) starts a worker that runs until the test ends.
//
// Every method that changes something returns once the worker has applied everything that
// change made claimable at the current virtual time: after Send, the event and whatever it
// caused (emits, spawned children, their start events …) have been applied. Nothing fires
// before the clock reaches it; Advance moves the clock and fires what falls due, in order.
//
// A Kit is meant for one test goroutine: its methods are not for concurrent use. Actions run on
// the kit's worker goroutine.
type Kit struct {
	tb            testing.TB
	settleTimeout time.Duration
	log           *slog.Logger

	reg  *chart.Registry
	defs []*chart.Definition

	clockMu sync.Mutex
	now     time.Time

	started  bool
	closed   bool
	store    *stead.Store
	probe    *probe
	tr       *transport.Transport
	client   *worker.Client
	machines worker.Machines
	runner   *worker.Worker
	stop     context.CancelFunc
	done     chan struct{}

	recMu sync.Mutex
	calls []Call
	emits []Emitted
}

// New returns a kit for tb; it stops its worker and closes its store when the test ends.
func New(tb testing.TB, opts ...Option) *Kit {
	tb.Helper()
	k := &Kit{tb: tb, settleTimeout: DefaultSettleTimeout, reg: chart.NewRegistry(), now: DefaultEpoch(),
		log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	for _, o := range opts {
		o(k)
	}
	tb.Cleanup(k.Close)
	return k
}

// Now returns the virtual time.
func (k *Kit) Now() time.Time {
	k.clockMu.Lock()
	defer k.clockMu.Unlock()
	return k.now
}

func (k *Kit) setNow(t time.Time) {
	k.clockMu.Lock()
	k.now = t
	k.clockMu.Unlock()
}

func (k *Kit) registering(what string) {
	k.tb.Helper()
	if k.started {
		k.tb.Fatalf("steadtest: %s registered after the kit started; register everything before the first Create", what)
	}
}

// Action registers fn under name, as chart.Registry.Action does, and records every call of it
// (see Calls).
func (k *Kit) Action(name string, fn chart.Action) *Kit {
	k.tb.Helper()
	k.registering("action " + name)
	k.reg.Action(name, k.recorded(name, fn))
	return k
}

// Selector registers fn as a selector with its labels, as chart.Registry.Selector does, and
// records every call of it.
func (k *Kit) Selector(name string, labels []string, fn chart.Action) *Kit {
	k.tb.Helper()
	k.registering("selector " + name)
	k.reg.Selector(name, labels, k.recorded(name, fn))
	return k
}

// Guard registers fn under name, as chart.Registry.Guard does.
func (k *Kit) Guard(name string, fn chart.Guard) *Kit {
	k.tb.Helper()
	k.registering("guard " + name)
	k.reg.Guard(name, fn)
	return k
}

// Define adds definitions the kit runs; an invoked definition must be added too.
func (k *Kit) Define(defs ...*chart.Definition) *Kit {
	k.tb.Helper()
	k.registering("a definition")
	for _, def := range defs {
		if def == nil {
			k.tb.Fatalf("steadtest: nil definition")
		}
		k.defs = append(k.defs, def)
		k.reg.Definition(def)
	}
	return k
}

// DefineYAML parses a YAML definition (name is used in error positions) and adds it; a
// definition that does not parse fails the test.
func (k *Kit) DefineYAML(name, src string) *Kit {
	k.tb.Helper()
	def, err := chart.Parse(name, []byte(src))
	if err != nil {
		k.tb.Fatalf("steadtest: %v", err)
	}
	return k.Define(def)
}

// start builds the engines and starts the worker, once.
func (k *Kit) start() {
	k.tb.Helper()
	if k.started {
		return
	}
	if err := k.startErr(); err != nil {
		k.tb.Fatalf("steadtest: %v", err)
	}
}

func (k *Kit) startErr() error {
	if len(k.defs) == 0 {
		return fmt.Errorf("%w: no definition; call Define or DefineYAML first", stead.ErrInvalid)
	}
	k.machines = worker.Machines{}
	for _, def := range k.defs {
		// Every step records its trace: the kit's assertions read it, and so does the replay
		// check of a next version.
		eng, err := chart.NewEngine(def, k.reg, chart.WithTrace())
		if err != nil {
			return err
		}
		k.machines[eng.DefinitionID()] = &recorder{eng: eng, k: k}
	}
	k.started = true
	k.store = memstore.New()
	k.probe = newProbe(memtransport.New(memtransport.WithClock(k.Now)).Backend(), k.Now)
	k.tr = transport.New(k.probe)
	k.client = &worker.Client{Store: k.store, Transport: k.tr, Known: k.machines, Clock: k.Now, Logger: k.log}
	w, err := worker.New(worker.Config{
		Store: k.store, Transport: k.tr, Machines: k.machines, Name: "steadtest", Clock: k.Now,
		// One loop taking one message at a time applies events in the order the transport
		// hands them out, so a run is the same every time.
		Concurrency: 1, BatchSize: 1,
		// The kit sweeps timers itself when the clock moves, and nothing is ever left for the
		// relay: a step's emits and spawns are delivered before its message is acknowledged.
		TimerInterval: -1, RelayInterval: -1,
		IdleWait: time.Second,
		Logger:   k.log,
	})
	if err != nil {
		_ = k.tr.Close()
		_ = k.store.Close()
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	k.stop, k.done = stop, make(chan struct{})
	go func() {
		defer close(k.done)
		_ = w.Run(ctx)
	}()
	k.runner = w
	// Run delivers what earlier runs left before its loop claims anything; settling here keeps
	// that recovery from overlapping the test's first call (it would find nothing, but it would
	// race the client for the first start event's outbox row).
	return k.settle()
}

// Close stops the kit's worker and closes its store and transport. The test's cleanup calls it;
// calling it earlier, or again, is harmless.
func (k *Kit) Close() {
	if k.done == nil || k.closed {
		return // never started, or the start failed before the worker ran
	}
	k.closed = true
	k.stop()
	<-k.done
	_ = k.tr.Close()
	_ = k.store.Close()
}

// Store returns the kit's execution store, for what the helpers do not cover. It starts the kit.
func (k *Kit) Store() *stead.Store {
	k.tb.Helper()
	k.start()
	return k.store
}

// Client returns a client of the kit's store and transport, for calls whose error the test
// checks itself (a refused create, a control command). Call Settle after using it. It starts the
// kit.
func (k *Kit) Client() *worker.Client {
	k.tb.Helper()
	k.start()
	return k.client
}

// Engine returns the engine of definition id ("order", or "order@2" for a versioned one), for
// a replay check of a next version (package steadtest/replay) against what the kit ran: its
// actions are the kit's, so their runs during the check are recorded too. An unknown id fails
// the test.
func (k *Kit) Engine(id string) *chart.Engine {
	k.tb.Helper()
	k.start()
	r, ok := k.machines[id].(*recorder)
	if !ok {
		k.tb.Fatalf("steadtest: no definition %q (the kit has %v)", id, slices.Sorted(maps.Keys(k.machines)))
	}
	return r.eng
}

// Machines returns the machines the kit runs, keyed by definition id ("order", "order@2"): its
// engines, wrapped to record what their steps emit.
func (k *Kit) Machines() worker.Machines {
	k.tb.Helper()
	k.start()
	return k.machines
}

// encode turns a test's value into JSON: raw JSON as it is, nil as none, anything else through
// encoding/json.
func encode(v any) (json.RawMessage, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return v, nil
	case []byte:
		return v, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", stead.ErrInvalid, err)
	}
	return raw, nil
}

// Create creates and starts an execution of definitionID (the newest version of an unversioned
// id) with data as its context (a map, a struct, raw JSON or nil) and returns it once its start
// and everything that followed at the current time have been applied.
func (k *Kit) Create(definitionID, id string, data any) *stead.Execution {
	k.tb.Helper()
	k.start()
	raw, err := encode(data)
	if err == nil {
		_, err = k.client.Create(k.ctx(), definitionID, id, raw)
	}
	if err != nil {
		k.tb.Fatalf("steadtest: create %q: %v", id, err)
	}
	k.Settle()
	return k.Execution(id)
}

// Send sends an event of kind with data (encoded as Create encodes a context) to execution id,
// lets the worker apply it and what it caused, and returns the event sent.
func (k *Kit) Send(id, kind string, data any) stead.Event {
	k.tb.Helper()
	k.start()
	raw, err := encode(data)
	var ev stead.Event
	if err == nil {
		ev, err = k.client.Send(k.ctx(), id, stead.Event{Kind: kind, Data: raw})
	}
	if err != nil {
		k.tb.Fatalf("steadtest: send %s to %q: %v", kind, id, err)
	}
	k.Settle()
	return ev
}

// Control applies an operator's command (suspend, resume, cancel, reset, set-state, retry) to
// execution id and settles. A refused command fails the test; use Client().Control to check a
// refusal.
func (k *Kit) Control(id string, cmd worker.Command) worker.Outcome {
	k.tb.Helper()
	k.start()
	if cmd.ID == "" {
		cmd.ID = worker.NewEventID()
	}
	out, err := k.client.Control(k.ctx(), id, cmd)
	if err != nil {
		k.tb.Fatalf("steadtest: %s %q: %v", cmd.Op, id, err)
	}
	k.Settle()
	return out
}

// ctx is the context of the kit's own calls: they run in memory and never block on anything
// but the store's lock.
func (k *Kit) ctx() context.Context { return context.Background() }

// Settle waits until the worker has applied everything claimable at the current virtual time,
// without moving the clock. The helpers call it; a test calls it after using Client directly.
func (k *Kit) Settle() {
	k.tb.Helper()
	k.start()
	if err := k.settle(); err != nil {
		k.tb.Fatalf("steadtest: %v", err)
	}
}

func (k *Kit) settle() error {
	deadline := time.NewTimer(k.settleTimeout)
	defer deadline.Stop()
	for {
		ok, changed := k.probe.settled()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return fmt.Errorf("the worker did not settle within %v (real time) at %s: a flow that never stops sending?",
				k.settleTimeout, k.Now().Format(time.RFC3339Nano))
		}
	}
}

// Advance moves the virtual clock forward by d. Every timer that falls due on the way (state
// timeouts, retry backoffs, time-to-live expiries, and events handed back with a delay) fires
// at its own time, in order: the clock stops at each, the worker applies what fired and what
// that caused (which may arm further timers, due within d too), and the clock moves on. It
// returns once the clock reads Now()+d and the worker has settled.
func (k *Kit) Advance(d time.Duration) {
	k.tb.Helper()
	if d < 0 {
		k.tb.Fatalf("steadtest: advance by %v: %v", d, fmt.Errorf("%w: negative duration", stead.ErrInvalid))
	}
	k.AdvanceTo(k.Now().Add(d))
}

// AdvanceTo is Advance up to the instant t; a t before Now fails the test.
func (k *Kit) AdvanceTo(t time.Time) {
	k.tb.Helper()
	k.start()
	if err := k.advanceTo(t); err != nil {
		k.tb.Fatalf("steadtest: %v", err)
	}
}

func (k *Kit) advanceTo(t time.Time) error {
	t = t.UTC().Truncate(time.Microsecond)
	if t.Before(k.Now()) {
		return fmt.Errorf("%w: advance to %s, before the clock's %s", stead.ErrInvalid,
			t.Format(time.RFC3339Nano), k.Now().Format(time.RFC3339Nano))
	}
	if err := k.settle(); err != nil {
		return err
	}
	for {
		next, ok, err := k.nextDue(t)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if err := k.stepTo(next); err != nil {
			return err
		}
	}
	return k.stepTo(t)
}

// nextDue is the earliest time at or before limit when something fires: a stored timer or a
// message handed back with a delay.
func (k *Kit) nextDue(limit time.Time) (time.Time, bool, error) {
	due, err := k.store.DueTimers(k.ctx(), limit, 1)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("due timers: %w", err)
	}
	var best time.Time
	found := len(due) > 0
	if found {
		best = due[0].FireAt
	}
	// A suspended execution's events are parked again at every recheck until it is resumed;
	// stopping the clock at each would turn a day into thousands of idle steps.
	park, ok := k.probe.nextPark(k.Now(), limit, func(group string) bool {
		exe, err := k.store.Load(k.ctx(), group)
		return err == nil && exe.Status == stead.StatusSuspended
	})
	if ok && (!found || park.Before(best)) {
		best, found = park, true
	}
	return best, found, nil
}

// stepTo moves the clock to t (never back), fires the timers due by then and settles.
func (k *Kit) stepTo(t time.Time) error {
	if t.After(k.Now()) {
		k.setNow(t)
	}
	k.probe.touch()
	if _, err := k.runner.SweepTimers(k.ctx()); err != nil {
		return fmt.Errorf("sweep timers at %s: %w", k.Now().Format(time.RFC3339Nano), err)
	}
	return k.settle()
}

// Execution loads execution id; a missing one fails the test.
func (k *Kit) Execution(id string) *stead.Execution {
	k.tb.Helper()
	k.start()
	exe, err := k.store.Load(k.ctx(), id)
	if err != nil {
		k.tb.Fatalf("steadtest: load %q: %v", id, err)
	}
	return exe
}

// Children returns the ids of the child executions id waits for or waited for (invoked machines
// and regions), sorted.
func (k *Kit) Children(id string) []string {
	k.tb.Helper()
	exe := k.Execution(id)
	ids := make([]string, 0, len(exe.Children))
	for c := range exe.Children {
		ids = append(ids, c)
	}
	slices.Sort(ids)
	return ids
}

// Trace returns the trace of execution id: one step per event applied, oldest first.
func (k *Kit) Trace(id string) []stead.TraceStep {
	k.tb.Helper()
	k.start()
	steps, err := k.store.ReadTrace(k.ctx(), id)
	if err != nil {
		k.tb.Fatalf("steadtest: trace of %q: %v", id, err)
	}
	return steps
}

// Path returns the states execution id has been in, in order, from its trace: one entry per
// step that changed its active state.
func (k *Kit) Path(id string) []string {
	k.tb.Helper()
	var path []string
	for _, st := range k.Trace(id) {
		if st.To != "" && (len(path) == 0 || path[len(path)-1] != st.To) {
			path = append(path, st.To)
		}
	}
	return path
}

// Value decodes the context key of execution id into a Go value (as encoding/json decodes into
// an any) and reports whether the key is set.
func (k *Kit) Value(id, key string) (any, bool) {
	k.tb.Helper()
	exe := k.Execution(id)
	m := map[string]json.RawMessage{}
	if len(exe.Context) > 0 {
		if err := json.Unmarshal(exe.Context, &m); err != nil {
			k.tb.Fatalf("steadtest: context of %q: %v", id, err)
		}
	}
	raw, ok := m[key]
	if !ok {
		return nil, false
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		k.tb.Fatalf("steadtest: context key %q of %q: %v", key, id, err)
	}
	return v, true
}
