package chart

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/steadhq/stead"
)

// maxMicrosteps bounds the completion and error transitions one event may chain, so that a
// definition whose completion transitions loop fails the execution instead of spinning.
const maxMicrosteps = 100

type nodeKind uint8

const (
	atomicNode nodeKind = iota
	compoundNode
	parallelNode
	finalNode
	choiceNode // a choice point: left at once through its first passing branch
	selectNode // a selector: left at once through the case its action's label picks
)

type act struct {
	name  string
	fn    Action
	retry *Retry // nil: a failure is not retried
}

type trans struct {
	src       int32
	target    int32 // -1: targetless
	internal  bool
	guardName string
	guard     Guard
	actions   []act
	outcome   string
	domain    int32   // deepest state neither exited nor entered; -1 is the machine root
	enter     []int32 // states entered on the way to target, outermost first, target last
}

type node struct {
	path      string
	parent    int32 // -1 for top-level states
	kind      nodeKind
	region    bool // a region: its parent is parallel
	initial   int32
	children  []int32
	outcome   string
	history   bool
	deep      bool // history remembers the last active leaf, not the child
	entry     []act
	exit      []act
	on        map[string][]*trans
	after     time.Duration
	timeout   *trans
	done      []*trans
	onError   *trans
	earlyExit []string
	defers    []string // event kinds the state defers
	choice    []*trans
	sel       *selector
	inv       *Invoke // a copy of the state's, with defaults filled in
}

type selector struct {
	act   act
	cases map[string]*trans
	els   *trans
}

// Engine advances executions of one definition. It is immutable after NewEngine and safe for
// concurrent use; Step is a pure function of its arguments and the registered actions.
type Engine struct {
	def     *Definition
	id      string
	returns []string // the context keys an invoked execution hands back
	schema  *schema  // the declared context keys, or nil
	ttl     time.Duration
	rearm   bool
	trace   bool
	// defaultRetry is WithDefaultRetry's policy, nil without the option.
	defaultRetry *Retry
	nodes        []node
	byPath       map[string]int32
	initial      int32
	// roomy is set when the definition has actions or invokes, whose steps change the context:
	// their executions are allocated with room for a small new context (executionWithContext).
	// Other steps keep the smaller allocation.
	roomy bool
	// ctxPool recycles the steps' context states (*ctxState), so that an action step does not
	// allocate one.
	ctxPool sync.Pool
}

// Option configures an Engine.
type Option func(*Engine)

// WithTrace makes every step carry a trace step, whatever the definition says.
func WithTrace() Option { return func(e *Engine) { e.trace = true } }

// WithDefaultRetry sets the retry policy of the actions that have none of their own, in place of
// DefaultRetry(), for definitions that do not set Definition.DefaultRetry; nil or NoRetry()
// turns retrying off for them. A policy out of range (see Retry) makes NewEngine fail with an
// error wrapping stead.ErrInvalid.
func WithDefaultRetry(r *Retry) Option {
	return func(e *Engine) {
		if r == nil {
			r = NoRetry()
		}
		c := *r
		e.defaultRetry = &c
	}
}

// NewEngine validates def against reg (nil means no actions or guards) and compiles it.
// The engine keeps its own compiled copy: changing def afterwards does not affect it.
func NewEngine(def *Definition, reg *Registry, opts ...Option) (*Engine, error) {
	if reg == nil {
		reg = NewRegistry()
	}
	if err := Validate(def, reg); err != nil {
		return nil, err
	}
	e := &Engine{def: def, id: def.VersionedID(), trace: def.Trace, byPath: map[string]int32{}, returns: slices.Clone(def.Returns),
		schema: compileSchema(def.Context), ttl: def.TTL, rearm: def.RearmTTL && def.TTL > 0}
	for _, o := range opts {
		o(e)
	}
	if e.defaultRetry != nil && def.DefaultRetry == nil {
		if err := checkRetryPolicy("the engine's default", e.defaultRetry); err != nil {
			return nil, err
		}
	}
	e.compile(reg)
	return e, nil
}

// DefinitionID is the id executions of this engine record: Definition.VersionedID.
func (e *Engine) DefinitionID() string { return e.id }

// Definition returns the definition the engine was built from.
func (e *Engine) Definition() *Definition { return e.def }

func (e *Engine) compile(reg *Registry) {
	// First pass: index every state, parents before children.
	var add func(parent int32, prefix string, states []*State, inParallel bool)
	add = func(parent int32, prefix string, states []*State, inParallel bool) {
		for _, s := range states {
			i := int32(len(e.nodes))
			n := node{path: joinPath(prefix, s.Name), parent: parent, region: inParallel, initial: -1,
				outcome: s.Final, history: s.History || s.DeepHistory, deep: s.DeepHistory, earlyExit: slices.Clone(s.EarlyExit)}
			switch {
			case s.IsFinal():
				n.kind = finalNode
			case s.Parallel:
				n.kind = parallelNode
			case len(s.States) > 0:
				n.kind = compoundNode
			case len(s.Choice) > 0:
				n.kind = choiceNode
			case s.Select != nil:
				n.kind = selectNode
			}
			e.nodes = append(e.nodes, n)
			e.byPath[n.path] = i
			if parent >= 0 {
				e.nodes[parent].children = append(e.nodes[parent].children, i)
			}
			add(i, n.path, s.States, s.Parallel)
		}
	}
	add(-1, "", e.def.States, false)
	e.initial = e.byPath[e.def.Initial]
	retries := make(map[string]*Retry, len(e.def.Retry))
	for name, r := range e.def.Retry {
		c := *r // the engine keeps its own copy
		retries[name] = &c
	}
	fallback := e.defaultRetry
	switch {
	case e.def.DefaultRetry != nil:
		c := *e.def.DefaultRetry
		fallback = &c
	case fallback == nil:
		d := DefaultRetry()
		fallback = &d
	}
	policy := func(name string) *Retry {
		r, ok := retries[name]
		if !ok {
			r = fallback
		}
		if r.Attempts < 2 {
			return nil // NoRetry
		}
		return r
	}
	acts := func(names []string) []act {
		if len(names) == 0 {
			return nil
		}
		e.roomy = true
		out := make([]act, len(names))
		for i, name := range names {
			out[i] = act{name: name, fn: reg.actions[name], retry: policy(name)}
		}
		return out
	}
	e.def.Walk(func(path string, s *State) {
		i := e.byPath[path]
		n := &e.nodes[i]
		if s.Initial != "" {
			n.initial = e.byPath[joinPath(path, s.Initial)]
		}
		n.entry, n.exit = acts(s.Entry), acts(s.Exit)
		n.defers = slices.Clone(s.Defer)
		mk := func(t *Transition) *trans {
			ct := &trans{src: i, target: -1, internal: t.Internal, guardName: t.Guard,
				actions: acts(t.Actions), outcome: t.Outcome, domain: i}
			if t.Guard != "" {
				ct.guard = reg.guards[t.Guard]
			}
			if t.Target != "" {
				ct.target = e.byPath[resolveTarget(e.byPath, path, t.Target)]
				ct.domain = e.domain(i, ct.target, t.Internal)
				for x := ct.target; x != ct.domain; x = e.nodes[x].parent {
					ct.enter = append(ct.enter, x)
				}
				slices.Reverse(ct.enter)
			}
			return ct
		}
		for _, t := range s.On {
			if n.on == nil {
				n.on = map[string][]*trans{}
			}
			n.on[t.Event] = append(n.on[t.Event], mk(t))
		}
		if s.Timeout != nil {
			n.after = s.Timeout.After
			n.timeout = mk(&s.Timeout.Transition)
		}
		for _, t := range s.Done {
			n.done = append(n.done, mk(t))
		}
		if s.OnError != nil {
			n.onError = mk(s.OnError)
		}
		for _, t := range s.Choice {
			n.choice = append(n.choice, mk(t))
		}
		if s.Invoke != nil {
			inv := *s.Invoke
			inv.Input = maps.Clone(inv.Input)
			if inv.ForEach != "" && inv.As == "" {
				inv.As = "item"
			}
			if inv.ForEach != "" && inv.Results == "" {
				inv.Results = "results"
			}
			n.inv = &inv
			e.roomy = true
		}
		if sel := s.Select; sel != nil {
			n.sel = &selector{act: acts([]string{sel.Action})[0], cases: map[string]*trans{}}
			for _, c := range sel.Cases {
				if c.Label == ElseLabel {
					n.sel.els = mk(&c.Transition)
				} else {
					n.sel.cases[c.Label] = mk(&c.Transition)
				}
			}
		}
	})
}

// domain is the deepest state a transition from src to target leaves active: src itself for an
// internal transition to a descendant, otherwise the deepest proper ancestor of both.
func (e *Engine) domain(src, target int32, internal bool) int32 {
	if internal && target != src && e.isAncestor(src, target) {
		return src
	}
	for a := e.nodes[src].parent; a >= 0; a = e.nodes[a].parent {
		if e.isAncestor(a, target) && a != target {
			return a
		}
	}
	return -1
}

// isAncestor reports whether a is d or one of d's ancestors.
func (e *Engine) isAncestor(a, d int32) bool {
	for x := d; x >= 0; x = e.nodes[x].parent {
		if x == a {
			return true
		}
	}
	return false
}

func (e *Engine) parent(i int32) int32 { return e.nodes[i].parent }

// TimeoutEvent is the event that fires the timer of state path of an execution, armed for
// fireAt. Its id is stable ("timeout:<execution id>:<path>:<fireAt in unix microseconds>"), so
// two sweepers that fire the same timer produce one effect after dedupe. Its data is
// {"path": ..., "fire_at": ...}: a timeout whose fire time is not the one the execution armed
// last (the state was left and re-entered since) is ignored, as is one for an inactive state.
func TimeoutEvent(executionID, path string, fireAt time.Time) stead.Event {
	data, _ := json.Marshal(timeoutData{Path: path, FireAt: fireAt.UTC()})
	return stead.Event{
		ID:        "timeout:" + executionID + ":" + path + ":" + strconv.FormatInt(fireAt.UnixMicro(), 10),
		Kind:      KindTimeout,
		Data:      data,
		CreatedAt: fireAt,
	}
}

// Step applies one event to an execution and returns the next execution and the bundle of side
// effects to commit with it. It never changes exe: the result is a new Execution with the same
// Version (the store bumps it on commit). Fields the step did not change (maps, context bytes)
// are shared with exe, so treat both as read-only or Clone them.
//
// The engine performs no I/O and reads no clock (the actions it runs may do I/O): now stamps
// UpdatedAt (CreatedAt on start, FinishedAt on finishing) and timer fire times. Given the same
// definition, execution, event and now, and actions that answer alike, it returns
// byte-identical results.
//
// An error is returned only for programming or data errors: an execution of another
// definition, a corrupt execution (an active path the definition does not have, a context that
// is not a JSON object), malformed system event data, or a suspended execution. Action failures
// are not errors: they take the nearest error transition or fail the execution.
//
// Events that the current configuration does not handle are ignored: the result differs from
// exe only in UpdatedAt, and the bundle carries just ProcessedEventID. While the active state
// is a parallel state, unhandled non-system events are forwarded to every unfinished region.
//
// Step gives actions context.Background as ActionContext.Context; StepContext gives them ctx.
func (e *Engine) Step(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	return e.StepContext(context.Background(), exe, ev, now)
}

// StepContext is Step with ctx handed to every action it runs as ActionContext.Context: the
// context an action's I/O should use, so that a worker stopping or a step's deadline passing
// cuts its calls short. The engine itself never reads ctx: a step whose ctx is done still runs,
// and an action that honours it fails, taking its error transition or retry like any failure.
func (e *Engine) StepContext(ctx context.Context, exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if exe == nil {
		return nil, stead.Bundle{}, fmt.Errorf("chart: %w: nil execution", stead.ErrInvalid)
	}
	if exe.DefinitionID != e.id {
		return nil, stead.Bundle{}, fmt.Errorf("chart: %w: execution %q runs definition %q, this engine runs %q",
			stead.ErrInvalid, exe.ID, exe.DefinitionID, e.id)
	}
	if ev.Kind == "" {
		return nil, stead.Bundle{}, fmt.Errorf("chart: %w: event %q has no kind", stead.ErrInvalid, ev.ID)
	}
	if e.ttl > 0 && ev.Kind == KindTimeout && isTTLTimeout(ev) {
		out, b, _, err := e.apply(ctx, exe, ev, now, keyRef{version: exe.Version}, 1)
		return out, b, err // an expiry is never held behind a retry
	}
	if _, ok := exe.Timers[RetryTimerPath]; ok && ev.Kind != KindCancel &&
		(exe.Status == stead.StatusRunning || exe.Status == stead.StatusPending) {
		return e.whileRetrying(ctx, exe, ev, now)
	}
	out, b, r, err := e.apply(ctx, exe, ev, now, keyRef{version: exe.Version}, 1)
	if err == nil && r.entered && !r.retried {
		out, b, err = e.redeliver(ctx, out, b, now, keyRef{version: exe.Version, index: r.acts}, false)
	}
	if err == nil && e.rearm && ev.Kind != KindTimeout && ev.Kind != KindStart {
		e.rearmTTL(out, &b, now)
	}
	return out, b, err
}

// applied is what one application of an event did.
type applied struct {
	entered bool // states were entered: deferred events get another chance
	retried bool // an action failed with attempts left: the step was discarded for a retry
	acts    int  // the index the next action's idempotency key takes
}

// apply runs one event against exe: attempt counts the runs of this event (1 unless retried), k
// is where its idempotency keys start.
func (e *Engine) apply(ctx context.Context, exe *stead.Execution, ev stead.Event, now time.Time, k keyRef, attempt int) (*stead.Execution, stead.Bundle, applied, error) {
	var out *stead.Execution
	var box *executionWithContext
	if e.roomy {
		box = &executionWithContext{exe: *exe}
		out = &box.exe
	} else {
		out = new(stead.Execution)
		*out = *exe
	}
	out.UpdatedAt = now
	s := stepper{e: e, in: exe, out: out, box: box, now: now, ev: ev, leaf: -1, root: -1, failedAt: -1,
		keyVersion: k.version, nextAct: k.index, attempt: attempt, io: ctx}
	s.b.ProcessedEventID = ev.ID
	err := s.locate()
	if err == nil {
		err = s.dispatch()
	}
	if err == nil && s.retrying != nil && s.fatal == nil {
		out, b := s.scheduleRetry(k)
		if s.ctx != nil {
			s.release()
		}
		return out, b, applied{retried: true, acts: s.nextAct}, nil
	}
	if err == nil {
		err = s.finishStep()
	}
	if s.ctx != nil { // not deferred: this is the hot path of every step
		s.release()
	}
	if err != nil {
		return nil, stead.Bundle{}, applied{}, err
	}
	return s.out, s.b, applied{entered: s.entered, acts: s.nextAct}, nil
}

// executionWithContext is a step's execution with room for a small new context in the same
// allocation: a step that changes the context then allocates once, not twice.
type executionWithContext struct {
	exe stead.Execution
	ctx [smallContext]byte
}

func corrupt(exe *stead.Execution, format string, args ...any) error {
	return fmt.Errorf("chart: %w: corrupt execution %q: %s", stead.ErrInvalid, exe.ID, fmt.Sprintf(format, args...))
}

// stepper is the state of one Step.
type stepper struct {
	e         *Engine
	io        context.Context // what actions use for I/O (ActionContext.Context)
	in        *stead.Execution
	out       *stead.Execution
	ev        stead.Event
	now       time.Time
	b         stead.Bundle
	ctx       *ctxState
	root      int32 // the state this execution runs: -1 for the whole machine, or a region
	leaf      int32 // the active leaf (-1 before start)
	nextAct   int
	actions   []string
	stopped   bool  // the execution finished during this step
	failedAt  int32 // the state whose action failed the execution, if one did
	ownHist   bool  // out.History is a copy this step may write
	ownSeq    bool
	ownChild  bool
	ownTimers bool
	control   bool // the step applies an operator's command (Engine.Control)
	fatal     error
	// keyVersion is the version idempotency keys name (the input's, or a retried event's first
	// attempt's); attempt counts the runs of this event.
	keyVersion  int64
	attempt     int
	retrying    *actionError // a failure that gets another attempt
	label       string       // the label the last action returned
	emptyFanOut bool         // the fan-out just entered found no item: its join completes at once
	entered     bool         // a state was entered
	// box, when set, holds out and the room finishStep writes a small new context into.
	box *executionWithContext
}

// locate resolves RootPath and ActivePath against the definition.
func (s *stepper) locate() error {
	exe := s.in
	if exe.RootPath != "" {
		r, ok := s.e.byPath[exe.RootPath]
		if !ok || !s.e.nodes[r].region {
			return corrupt(exe, "root path %q is not a region of definition %q", exe.RootPath, s.e.id)
		}
		s.root = r
	}
	if exe.ActivePath == "" {
		if exe.Status == stead.StatusRunning || exe.Status == stead.StatusDone {
			return corrupt(exe, "status %s without an active path", exe.Status)
		}
		return nil
	}
	l, ok := s.e.byPath[exe.ActivePath]
	if !ok {
		return corrupt(exe, "active path %q is not a state of definition %q", exe.ActivePath, s.e.id)
	}
	if s.root >= 0 && !s.e.isAncestor(s.root, l) {
		return corrupt(exe, "active path %q is outside its root %q", exe.ActivePath, exe.RootPath)
	}
	if exe.Status == stead.StatusRunning {
		switch s.e.nodes[l].kind {
		case compoundNode:
			return corrupt(exe, "active path %q is a compound state, not a leaf", exe.ActivePath)
		}
	}
	s.leaf = l
	return nil
}

func (s *stepper) dispatch() error {
	ev := s.ev
	st := s.in.Status
	if ev.Kind == KindCancel {
		switch st {
		case stead.StatusDone, stead.StatusCancelled:
		default:
			s.cancel()
		}
		return nil
	}
	switch st {
	case stead.StatusPending:
		if ev.Kind == KindStart {
			return s.start()
		}
		return nil
	case stead.StatusSuspended:
		return fmt.Errorf("chart: %w: execution %q is suspended; only %s applies", stead.ErrInvalid, s.in.ID, KindCancel)
	case stead.StatusRunning:
	default:
		return nil // finished, or cancelling: the backlog drains until the cancel arrives
	}
	switch ev.Kind {
	case KindStart:
		return nil
	case KindTimeout:
		return s.timeout()
	case KindFinished:
		return s.childFinished()
	}
	for n := s.leaf; n != s.root && n >= 0; n = s.e.parent(n) {
		nd := &s.e.nodes[n]
		for _, t := range nd.on[ev.Kind] {
			if ok, err := s.guard(t, ev); err != nil {
				s.drive(nil, stead.Event{}, err)
				return nil
			} else if ok {
				s.drive(t, ev, nil)
				return nil
			}
		}
		if len(nd.defers) > 0 && slices.Contains(nd.defers, ev.Kind) {
			s.deferEvent()
			return nil
		}
	}
	if s.e.nodes[s.leaf].kind == parallelNode && !strings.HasPrefix(ev.Kind, "stead.") {
		s.forward()
	}
	return nil
}

func (s *stepper) start() error {
	if len(s.ev.Data) > 0 && string(s.ev.Data) != "null" {
		if err := s.context().merge(s.ev.Data); err != nil {
			return fmt.Errorf("chart: %w: start data of %q is not a JSON object: %v", stead.ErrInvalid, s.in.ID, err)
		}
	}
	if sc := s.e.schema; sc != nil && s.in.RootPath == "" {
		// A region child starts from its parent's context, checked when the parent started.
		c := s.context()
		if err := c.decode(); err != nil {
			return fmt.Errorf("chart: %w: start context of %q: %v", stead.ErrInvalid, s.in.ID, err)
		}
		n := len(c.m)
		if err := sc.prepare(c.m); err != nil {
			s.fail("start context: " + err.Error())
			return nil
		}
		if len(c.m) != n {
			c.dirty, c.changed = true, true
		}
	}
	s.out.Status = stead.StatusRunning
	if len(s.out.Context) == 0 {
		s.out.Context = json.RawMessage("{}") // a started execution always has an object
	}
	s.keepStartContext()
	s.armTTL()
	if s.out.CreatedAt.IsZero() {
		s.out.CreatedAt = s.now
	}
	s.drive(nil, s.ev, nil)
	return nil
}

// drive runs one transition (or, with t nil and no error, the start of the execution) and the
// completion and error transitions that follow it.
func (s *stepper) drive(t *trans, ev stead.Event, err error) {
	var entered bool
	switch {
	case err != nil:
	case t == nil:
		entered, err = s.enterStart(ev)
	default:
		entered, err = s.fire(t, ev)
	}
	var recovering *actionError
	for micro := 0; !s.stopped && s.fatal == nil; micro++ {
		if micro > maxMicrosteps {
			s.fail(fmt.Sprintf("more than %d completion or error transitions in one step", maxMicrosteps))
			return
		}
		if err != nil {
			var ae *actionError
			if !errors.As(err, &ae) {
				s.fatal = err
				return
			}
			if s.retryable(ae) {
				s.retrying, s.stopped = ae, true
				return
			}
			if recovering != nil {
				s.failedAt = ae.owner
				s.fail(fmt.Sprintf("%s (while recovering from %s)", ae, recovering))
				return
			}
			h := s.errorHandler(ae.owner)
			if h == nil {
				s.failedAt = ae.owner
				msg := ae.Error()
				if ae.retry != nil && s.attempt > 1 {
					msg += fmt.Sprintf(" (retries exhausted: %d attempts)", s.attempt)
				}
				s.fail(msg)
				return
			}
			recovering = ae
			entered, err = s.fire(h, s.errorEvent(ae))
			continue
		}
		recovering = nil
		if !entered {
			return
		}
		ct, cev, cerr := s.completion()
		if cerr != nil {
			err = cerr
			continue
		}
		if ct == nil {
			return
		}
		entered, err = s.fire(ct, cev)
	}
}

func (s *stepper) enterStart(ev stead.Event) (bool, error) {
	if s.root >= 0 {
		if err := s.enterNode(s.root, ev); err != nil {
			return true, err
		}
		return true, s.enterDefault(s.root, ev)
	}
	if err := s.enterNode(s.e.initial, ev); err != nil {
		return true, err
	}
	return true, s.enterDefault(s.e.initial, ev)
}

// fire takes one transition from the current configuration. It reports whether states were
// entered (so completion must be checked).
func (s *stepper) fire(t *trans, ev stead.Event) (bool, error) {
	if t.target < 0 {
		return false, s.runActions(t.actions, t.src, ev)
	}
	for s.leaf != t.domain {
		if s.leaf < 0 || s.leaf == s.root {
			s.fatal = corrupt(s.in, "transition from %q leaves the execution's root", s.e.nodes[t.src].path)
			return false, nil
		}
		if err := s.exitNode(s.leaf, ev); err != nil {
			return false, err
		}
	}
	if err := s.runActions(t.actions, t.src, ev); err != nil {
		return false, err
	}
	for _, n := range t.enter {
		if err := s.enterNode(n, ev); err != nil {
			return true, err
		}
	}
	return true, s.enterDefault(t.target, ev)
}

func (s *stepper) enterNode(n int32, ev stead.Event) error {
	s.leaf, s.entered = n, true
	nd := &s.e.nodes[n]
	if err := s.runActions(nd.entry, n, ev); err != nil {
		return err
	}
	if nd.timeout != nil {
		// Microseconds: what every store keeps, so the fire time a sweeper reports back
		// compares equal to the one recorded here.
		at := s.now.Add(nd.after).Truncate(time.Microsecond)
		s.timers()[nd.path] = at
		s.b.Timers = append(s.b.Timers, stead.TimerOp{Action: stead.TimerSchedule, Path: nd.path, FireAt: at})
	}
	return nil
}

// enterDefault continues from an entered state down to a leaf: initial children (or the child
// that history remembers), and for a parallel state the spawning of its regions.
func (s *stepper) enterDefault(n int32, ev stead.Event) error {
	for {
		nd := &s.e.nodes[n]
		switch nd.kind {
		case compoundNode:
			child := nd.initial
			if nd.history {
				if p, ok := s.out.History[nd.path]; ok {
					if c, ok := s.e.byPath[p]; ok && s.e.nodes[c].parent == n {
						child = c
					} else if ok && nd.deep && c != n && s.e.isAncestor(n, c) {
						return s.enterDeep(n, c, ev)
					}
				}
			}
			if err := s.enterNode(child, ev); err != nil {
				return err
			}
			n = child
		case parallelNode:
			return s.spawn(n)
		default:
			if nd.inv != nil {
				return s.invoke(n)
			}
			return nil
		}
	}
}

// enterDeep enters, below compound n, the chain of states down to leaf (outermost first), then
// continues from the leaf as enterDefault would.
func (s *stepper) enterDeep(n, leaf int32, ev stead.Event) error {
	var chain []int32
	for x := leaf; x != n; x = s.e.parent(x) {
		chain = append(chain, x)
	}
	slices.Reverse(chain)
	for _, x := range chain {
		if err := s.enterNode(x, ev); err != nil {
			return err
		}
	}
	return s.enterDefault(leaf, ev)
}

func (s *stepper) exitNode(n int32, ev stead.Event) error {
	nd := &s.e.nodes[n]
	if err := s.runActions(nd.exit, n, ev); err != nil {
		return err
	}
	if nd.timeout != nil {
		s.disarmTimer(nd.path)
	}
	if nd.kind == parallelNode {
		s.cancelRegions(n)
		seq := s.out.InvokeSeq[nd.path]
		s.invokeSeq()[nd.path] = seq + 1
	}
	if nd.inv != nil {
		s.cancelInvoked(n)
		seq := s.out.InvokeSeq[nd.path]
		s.invokeSeq()[nd.path] = seq + 1
	}
	if p := nd.parent; p >= 0 && s.e.nodes[p].history && !s.e.nodes[p].deep {
		s.history()[s.e.nodes[p].path] = nd.path
	}
	if nd.kind != compoundNode {
		// The active leaf is the first state a transition leaves: every enclosing state with
		// deep history remembers it, and the compound states left after it do not overwrite that.
		for a := nd.parent; a >= 0; a = s.e.nodes[a].parent {
			if s.e.nodes[a].deep {
				s.history()[s.e.nodes[a].path] = nd.path
			}
		}
	}
	s.leaf = nd.parent
	return nil
}

func (s *stepper) childID(region int32, seq int) string {
	return s.in.ID + ":" + s.e.nodes[region].path + ":" + strconv.Itoa(seq)
}

// spawn starts one child execution per region of parallel state n.
func (s *stepper) spawn(n int32) error {
	nd := &s.e.nodes[n]
	seq := s.out.InvokeSeq[nd.path]
	raw, err := s.context().encode()
	if err != nil {
		return &actionError{owner: n, action: "spawn", err: err}
	}
	children := make(map[string]stead.ChildState, len(nd.children))
	for _, r := range nd.children {
		id := s.childID(r, seq)
		rp := s.e.nodes[r].path
		children[id] = stead.ChildState{RootPath: rp, Key: rp}
		s.b.Spawns = append(s.b.Spawns, stead.Spawn{ChildID: id, RootPath: rp, Context: raw})
	}
	s.out.Children, s.ownChild = children, true
	return nil
}

// cancelRegions cancels the unfinished children of parallel state n, in region order.
func (s *stepper) cancelRegions(n int32) {
	nd := &s.e.nodes[n]
	seq := s.out.InvokeSeq[nd.path]
	for _, r := range nd.children {
		s.cancelChild(s.childID(r, seq))
	}
}

// cancelChild marks child id cancelled, if it is a child that has not finished, and tells it.
func (s *stepper) cancelChild(id string) {
	cs, ok := s.out.Children[id]
	if !ok || cs.Finished {
		return
	}
	cs.Finished, cs.Outcome = true, OutcomeCancelled
	s.children()[id] = cs
	if s.control {
		// An operator's command cancels like the operator would: the child may be suspended
		// (its queue parked), which a cancel request overrides and a queued cancel would not.
		s.emit(id, stead.Event{ID: s.ev.ID, Kind: KindCancelRequest, CreatedAt: s.now})
		return
	}
	s.emit(id, stead.Event{ID: "cancel:" + id, Kind: KindCancel, CreatedAt: s.now})
}

// completion returns the transition to take at once now that states were entered: a choice
// point's branch, a selector's case, or the completion transition of a final state's parent.
func (s *stepper) completion() (*trans, stead.Event, error) {
	leaf := &s.e.nodes[s.leaf]
	switch leaf.kind {
	case choiceNode:
		for _, t := range leaf.choice {
			if ok, err := s.guard(t, s.ev); err != nil || ok {
				return t, s.ev, err
			}
		}
		return nil, stead.Event{}, nil // unreachable: Validate requires an else branch
	case selectNode:
		return s.selectCase(s.leaf)
	case finalNode:
	default:
		if s.emptyFanOut && leaf.inv != nil {
			s.emptyFanOut = false
			return s.pickDone(s.leaf, OutcomeSuccess) // nothing to wait for
		}
		return nil, stead.Event{}, nil
	}
	p := leaf.parent
	if p == s.root {
		s.finish(leaf.outcome)
		return nil, stead.Event{}, nil
	}
	return s.pickDone(p, leaf.outcome)
}

// selectCase runs selector n's action and returns the case its label picks.
func (s *stepper) selectCase(n int32) (*trans, stead.Event, error) {
	sel := s.e.nodes[n].sel
	s.label = ""
	if err := s.call(sel.act, n, s.ev); err != nil {
		return nil, stead.Event{}, err
	}
	if t, ok := sel.cases[s.label]; ok {
		return t, s.ev, nil
	}
	if sel.els != nil {
		return sel.els, s.ev, nil
	}
	return nil, stead.Event{}, &actionError{owner: n, action: sel.act.name,
		err: fmt.Errorf("returned label %q, for which selector %q has no case", s.label, s.e.nodes[n].path)}
}

func (s *stepper) pickDone(p int32, outcome string) (*trans, stead.Event, error) {
	ev := stead.Event{ID: s.ev.ID, Kind: KindDone, CreatedAt: s.now,
		Data: mustJSON(map[string]string{"state": s.e.nodes[p].path, "outcome": outcome})}
	for _, t := range s.e.nodes[p].done {
		if t.outcome != "" && t.outcome != outcome {
			continue
		}
		ok, err := s.guard(t, ev)
		if err != nil {
			return nil, stead.Event{}, err
		}
		if ok {
			return t, ev, nil
		}
	}
	return nil, stead.Event{}, nil
}

func (s *stepper) timeout() error {
	var d timeoutData
	if err := json.Unmarshal(s.ev.Data, &d); err != nil {
		return fmt.Errorf("chart: %w: timeout event %q: data is not {\"path\": ..., \"fire_at\": ...}: %v", stead.ErrInvalid, s.ev.ID, err)
	}
	if d.Path == TTLTimerPath {
		s.expire(d.FireAt)
		return nil
	}
	n, ok := s.e.byPath[d.Path]
	if !ok || !s.isActive(n) || s.e.nodes[n].timeout == nil {
		return nil
	}
	armed, ok := s.out.Timers[d.Path]
	if !ok {
		return nil // already fired
	}
	if !d.FireAt.IsZero() && absDuration(armed.Sub(d.FireAt)) >= time.Microsecond {
		return nil // fired for an earlier arming: the state was left and entered again since
	}
	s.dropTimer(d.Path) // consumed, whatever the guard says
	t := s.e.nodes[n].timeout
	if ok, err := s.guard(t, s.ev); err != nil {
		s.drive(nil, stead.Event{}, err)
	} else if ok {
		s.drive(t, s.ev, nil)
	}
	return nil
}

// timeoutData is the payload of KindTimeout.
type timeoutData struct {
	Path   string    `json:"path"`
	FireAt time.Time `json:"fire_at,omitzero"`
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// finishedData is the payload of KindFinished.
type finishedData struct {
	ChildID string          `json:"child_id"`
	Outcome string          `json:"outcome"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   string          `json:"error,omitempty"`
}

func (s *stepper) childFinished() error {
	var d finishedData
	if err := json.Unmarshal(s.ev.Data, &d); err != nil {
		return fmt.Errorf("chart: %w: finished event %q: %v", stead.ErrInvalid, s.ev.ID, err)
	}
	p := s.leaf
	if s.e.nodes[p].inv != nil {
		return s.invokeFinished(p, d)
	}
	if s.e.nodes[p].kind != parallelNode {
		return nil // a late notice for a parallel state already left
	}
	pn := &s.e.nodes[p]
	cs, ok := s.out.Children[d.ChildID]
	if !ok || cs.Finished || !strings.HasPrefix(cs.RootPath, pn.path+".") {
		return nil
	}
	cs.Finished, cs.Outcome, cs.Result = true, d.Outcome, d.Result
	s.children()[d.ChildID] = cs
	seq := s.out.InvokeSeq[pn.path]
	early := slices.Contains(pn.earlyExit, d.Outcome)
	joinOutcome := ""
	if early {
		joinOutcome = d.Outcome
	}
	results := map[string]json.RawMessage{}
	for _, r := range pn.children {
		c, ok := s.out.Children[s.childID(r, seq)]
		if !ok || !c.Finished {
			if !early {
				return nil // the join waits for this region
			}
			continue
		}
		if joinOutcome == "" && c.Outcome != OutcomeSuccess {
			joinOutcome = c.Outcome
		}
		if len(c.Result) > 0 {
			results[s.e.nodes[r].path[len(pn.path)+1:]] = c.Result
		}
	}
	if joinOutcome == "" {
		joinOutcome = OutcomeSuccess
	}
	if len(results) > 0 {
		raw, err := json.Marshal(results)
		if err != nil {
			return fmt.Errorf("chart: %w: finished event %q: result is not JSON: %v", stead.ErrInvalid, s.ev.ID, err)
		}
		if err := s.context().set(RegionResultsKey, raw); err != nil {
			return nil // reported as fatal by finishStep
		}
	}
	t, ev, err := s.pickDone(p, joinOutcome)
	if err != nil {
		s.drive(nil, stead.Event{}, err)
	} else if t != nil {
		s.drive(t, ev, nil)
	}
	return nil
}

// forward hands an event the parent does not handle to its unfinished regions.
func (s *stepper) forward() {
	nd := &s.e.nodes[s.leaf]
	seq := s.out.InvokeSeq[nd.path]
	for _, r := range nd.children {
		id := s.childID(r, seq)
		if cs, ok := s.out.Children[id]; ok && !cs.Finished {
			ev := s.ev
			s.emit(id, ev)
		}
	}
}

func (s *stepper) isActive(n int32) bool {
	for x := s.leaf; x != s.root && x >= 0; x = s.e.parent(x) {
		if x == n {
			return true
		}
	}
	return false
}

func (s *stepper) errorHandler(owner int32) *trans {
	n := owner
	for n >= 0 && n != s.root && !s.isActive(n) {
		n = s.e.parent(n)
	}
	for ; n >= 0 && n != s.root; n = s.e.parent(n) {
		if h := s.e.nodes[n].onError; h != nil {
			return h
		}
	}
	return nil
}

func (s *stepper) errorEvent(ae *actionError) stead.Event {
	return stead.Event{ID: s.ev.ID, Kind: KindError, CreatedAt: s.now, Data: mustJSON(map[string]string{
		"state": s.e.nodes[ae.owner].path, "action": ae.action, "error": ae.err.Error()})}
}

// finish marks the execution done with outcome and tells the parent.
func (s *stepper) finish(outcome string) {
	s.out.Status, s.out.Outcome, s.out.FinishedAt = stead.StatusDone, outcome, s.now
	s.out.Deferred = nil // a finished execution applies no event
	s.disarmTTL()
	s.stopped = true
	s.notifyParent(outcome, "")
}

// fail marks the execution failed: timers of active states are disarmed, children cancelled,
// and the parent told.
func (s *stepper) fail(msg string) {
	s.out.Status, s.out.Error, s.out.FinishedAt = stead.StatusFailed, msg, s.now
	s.stopped = true
	s.keepDeadLetter()
	s.disarm()
	s.notifyParent(OutcomeFailure, msg)
}

func (s *stepper) cancel() {
	s.out.Status, s.out.FinishedAt = stead.StatusCancelled, s.now
	s.out.Deferred = nil // a cancelled execution applies no event
	s.stopped = true
	if s.in.Status == stead.StatusFailed {
		return // already disarmed and reported when it failed
	}
	s.exitForCancel()
	s.disarm()
	s.notifyParent(OutcomeCancelled, "")
}

// disarm cancels the timers of the active states (and of a pending retry) and the unfinished
// children.
func (s *stepper) disarm() {
	s.clearRetry(true)
	s.disarmTTL()
	for n := s.leaf; n != s.root && n >= 0; n = s.e.parent(n) {
		nd := &s.e.nodes[n]
		if nd.timeout != nil {
			s.disarmTimer(nd.path)
		}
		if nd.kind == parallelNode {
			s.cancelRegions(n)
		}
		if nd.inv != nil {
			s.cancelInvoked(n)
		}
	}
}

// disarmTimer cancels the timer of a state being left. The cancel op goes out even when the
// timer already fired: the store deletes whatever row is left, whatever its fire time.
func (s *stepper) disarmTimer(path string) {
	s.dropTimer(path)
	s.b.Timers = append(s.b.Timers, stead.TimerOp{Action: stead.TimerCancel, Path: path})
}

func (s *stepper) notifyParent(outcome, errMsg string) {
	if s.in.ParentID == "" {
		return
	}
	raw, err := s.context().encode()
	if err != nil {
		raw = nil
	}
	if s.in.RootPath == "" {
		raw = s.returned() // an invoked machine hands back only what its definition returns
	}
	d := finishedData{ChildID: s.in.ChildID, Outcome: outcome, Result: raw, Error: errMsg}
	s.emit(s.in.ParentID, stead.Event{ID: "finished:" + s.in.ID, Kind: KindFinished, Data: mustJSON(d), CreatedAt: s.now})
}

func (s *stepper) emit(target string, ev stead.Event) {
	s.b.Emits = append(s.b.Emits, stead.Emit{Target: target, Event: ev})
}

// guard evaluates t's guard; a panicking guard counts as an error of the transition's source.
func (s *stepper) guard(t *trans, ev stead.Event) (ok bool, err error) {
	if t.guard == nil {
		return true, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = &actionError{owner: t.src, action: "guard " + t.guardName, err: fmt.Errorf("panic: %v", r)}
		}
	}()
	return t.guard(GuardContext{Values: Values{c: s.context()}, ExecutionID: s.in.ID,
		State: s.e.nodes[t.src].path, Event: ev}), nil
}

// actionError is an action (or guard) failure, attributed to the state that ran it.
type actionError struct {
	owner  int32
	action string
	err    error
	retry  *Retry // the failed action's retry policy, when its failure may be retried
}

func (a *actionError) Error() string { return fmt.Sprintf("action %q: %v", a.action, a.err) }

func (s *stepper) runActions(acts []act, owner int32, ev stead.Event) error {
	for _, a := range acts {
		if err := s.call(a, owner, ev); err != nil {
			return err
		}
	}
	return nil
}

func (s *stepper) call(a act, owner int32, ev stead.Event) (err error) {
	index := s.nextAct
	s.nextAct++
	if s.e.trace {
		s.actions = append(s.actions, a.name)
	}
	c := s.context()
	if c.err != nil {
		return c.err // corrupt context: finishStep reports it
	}
	c.attrs = s.out.Attributes
	var res ActionResult
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		res, err = a.fn(ActionContext{Values: Values{c: c}, ExecutionID: s.in.ID, ParentID: s.in.ParentID,
			State: s.e.nodes[owner].path, Event: ev, Attempt: max(s.attempt, 1), keyVersion: s.keyVersion, keyIndex: index,
			ctx: s.io})
	}()
	if err != nil {
		c.discard()
		return &actionError{owner: owner, action: a.name, err: err, retry: a.retry}
	}
	var sends []stead.Emit
	var key string
	if len(res.Send) > 0 {
		key = actionKey(s.in.ID, s.keyVersion, index)
	}
	for j, m := range res.Send {
		if m.Kind == "" {
			c.discard()
			return &actionError{owner: owner, action: a.name, err: fmt.Errorf("send %d has no kind", j)}
		}
		var data json.RawMessage
		if m.Data != nil {
			raw, err := json.Marshal(m.Data)
			if err != nil {
				c.discard()
				return &actionError{owner: owner, action: a.name, err: fmt.Errorf("send %d: %w", j, err)}
			}
			data = raw
		}
		to := m.To
		if to == "" {
			to = s.in.ID
		}
		sends = append(sends, stead.Emit{Target: to, Event: stead.Event{
			ID: key + ":" + strconv.Itoa(j), Kind: m.Kind, Data: data, CreatedAt: s.now}})
	}
	attrs, changed, err := s.takeAttributes(c)
	if err != nil {
		c.discard()
		return &actionError{owner: owner, action: a.name, err: err}
	}
	if err := c.apply(&res, s.e.schema); err != nil {
		if c.err != nil {
			return err
		}
		return &actionError{owner: owner, action: a.name, err: err}
	}
	if changed {
		s.setAttributes(attrs)
	}
	s.b.Emits = append(s.b.Emits, sends...)
	s.label = res.Label
	return nil
}

// takeAttributes takes what the action that just returned staged with SetAttribute and returns
// the attributes they make of the execution's, checked as a store checks them, without changing
// anything yet: the action may still fail.
func (s *stepper) takeAttributes(c *ctxState) (map[string]stead.AttrValue, bool, error) {
	staged, err := c.attrStaged, c.attrErr
	c.attrStaged, c.attrErr, c.attrs = c.attrStaged[:0], nil, nil
	if err != nil {
		return nil, false, err
	}
	if len(staged) == 0 {
		return nil, false, nil
	}
	next := maps.Clone(s.out.Attributes) // the input's map is shared: never written in place
	if next == nil {
		next = make(map[string]stead.AttrValue, len(staged))
	}
	for _, ch := range staged {
		if ch.val.IsZero() {
			delete(next, ch.key)
		} else {
			next[ch.key] = ch.val
		}
	}
	if len(next) > stead.MaxAttributes {
		return nil, false, fmt.Errorf("%w: %d attributes, more than %d", stead.ErrInvalid, len(next), stead.MaxAttributes)
	}
	return next, true, nil
}

// setAttributes makes attrs the execution's attributes and records in the bundle every key whose
// value they change (the zero value for a key they drop), so that the commit indexes what the
// execution it stores carries: a store refuses an execution whose attributes changed alone.
func (s *stepper) setAttributes(attrs map[string]stead.AttrValue) {
	cur := s.out.Attributes
	for k, v := range attrs {
		if old, ok := cur[k]; !ok || old != v {
			s.attrChange(k, v)
		}
	}
	for k := range cur {
		if _, ok := attrs[k]; !ok {
			s.attrChange(k, stead.AttrValue{})
		}
	}
	if len(attrs) == 0 {
		attrs = nil
	}
	s.out.Attributes = attrs
}

func (s *stepper) attrChange(k string, v stead.AttrValue) {
	if s.b.Attributes == nil {
		s.b.Attributes = make(map[string]stead.AttrValue)
	}
	s.b.Attributes[k] = v
}

func (s *stepper) context() *ctxState {
	if s.ctx == nil {
		c, _ := s.e.ctxPool.Get().(*ctxState)
		if c == nil {
			c = new(ctxState)
		}
		c.raw = s.in.Context
		s.ctx = c
	}
	return s.ctx
}

// release hands the step's context state back for a later step to reuse. Nothing the step
// returns points into it: the new context is written into its own bytes (encode), and what
// actions and guards were handed (Values) is valid only while they run.
func (s *stepper) release() {
	c := s.ctx
	s.ctx = nil
	*c = ctxState{}
	s.e.ctxPool.Put(c)
}

func (s *stepper) history() map[string]string { return writable(&s.out.History, &s.ownHist) }

func (s *stepper) invokeSeq() map[string]int { return writable(&s.out.InvokeSeq, &s.ownSeq) }

// dropTimer forgets an armed timer.
func (s *stepper) dropTimer(path string) {
	if _, armed := s.out.Timers[path]; !armed {
		return
	}
	if len(s.out.Timers) == 1 {
		s.out.Timers, s.ownTimers = nil, false // the common case costs no copy
		return
	}
	delete(s.timers(), path)
}

func (s *stepper) timers() map[string]time.Time { return writable(&s.out.Timers, &s.ownTimers) }

func (s *stepper) children() map[string]stead.ChildState {
	return writable(&s.out.Children, &s.ownChild)
}

// writable returns *m for the step to write into. The first call (*own false) replaces *m with a
// copy, so the step never writes through a map it shares with its input execution.
func writable[V any](m *map[string]V, own *bool) map[string]V {
	if !*own {
		c := make(map[string]V, len(*m)+1)
		for k, v := range *m {
			c[k] = v
		}
		*m, *own = c, true
	}
	return *m
}

func (s *stepper) finishStep() error {
	if s.fatal != nil {
		return s.fatal
	}
	if s.ctx != nil {
		if s.ctx.err != nil {
			return corrupt(s.in, "%v", s.ctx.err)
		}
		if s.ctx.changed {
			var space []byte
			if s.box != nil {
				space = s.box.ctx[:0]
			}
			raw, err := s.ctx.encodeFinal(space)
			if err != nil {
				return corrupt(s.in, "context does not encode: %v", err)
			}
			s.out.Context = raw
		}
	}
	switch {
	case s.failedAt >= 0:
		// A failure can strike mid-transition, between exits and entries; the state whose
		// action failed says more than the half-built configuration.
		s.out.ActivePath = s.e.nodes[s.failedAt].path
	case s.leaf >= 0:
		s.out.ActivePath = s.e.nodes[s.leaf].path
	}
	if s.e.trace {
		s.b.Trace = &stead.TraceStep{EventID: s.ev.ID, EventKind: s.ev.Kind, From: s.in.ActivePath,
			To: s.out.ActivePath, Actions: s.actions, Context: s.out.Context, At: s.now}
	}
	return nil
}

func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("chart: encoding %T: %v", v, err)) // only called with types that always encode
	}
	return raw
}
