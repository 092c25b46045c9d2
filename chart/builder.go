package chart

import (
	"path/filepath"
	"runtime"
	"time"
)

// Builder assembles a Definition in Go. Every method records its call site, so validation
// errors point at the line that declared the offending state or transition.
//
//	b := chart.New("door")
//	b.Initial("closed")
//	b.State("closed").On("open", "opened")
//	b.State("opened").On("close", "closed")
//	def, err := b.Definition()
type Builder struct {
	def *Definition
}

// New starts a definition with the given id.
func New(id string) *Builder {
	return &Builder{def: &Definition{ID: id, Pos: caller()}}
}

// Initial names the top-level state a started execution enters.
func (b *Builder) Initial(name string) *Builder { b.def.Initial = name; return b }

// Retry gives an action a retry policy (see Retry); r.Pos is set to the call site.
func (b *Builder) Retry(action string, r Retry) *Builder {
	r.Pos = caller()
	if b.def.Retry == nil {
		b.def.Retry = map[string]*Retry{}
	}
	b.def.Retry[action] = &r
	return b
}

// DefaultRetry sets the policy of every action Retry does not name (Definition.DefaultRetry);
// NoRetry turns retrying off. r.Pos is set to the call site.
func (b *Builder) DefaultRetry(r Retry) *Builder {
	r.Pos = caller()
	b.def.DefaultRetry = &r
	return b
}

// Key declares a context key (k.Pos is set to the call site).
func (b *Builder) Key(k ContextKey) *Builder {
	k.Pos = caller()
	b.def.Context = append(b.def.Context, &k)
	return b
}

// TTL gives executions a time to live; with rearm, every event pushes it back.
func (b *Builder) TTL(d time.Duration, rearm bool) *Builder {
	b.def.TTL, b.def.RearmTTL = d, rearm
	return b
}

// Returns lists the context keys an invoked execution of this definition hands back.
func (b *Builder) Returns(keys ...string) *Builder {
	b.def.Returns = append(b.def.Returns, keys...)
	return b
}

// Limit sets the definition's limit (see Limit); l.Pos is set to the call site.
func (b *Builder) Limit(l Limit) *Builder {
	l.Pos = caller()
	b.def.Limit = &l
	return b
}

// Schedule declares a timetable that starts executions of the definition (see Schedule);
// sc.Pos is set to the call site.
func (b *Builder) Schedule(sc Schedule) *Builder {
	sc.Pos = caller()
	b.def.Schedules = append(b.def.Schedules, &sc)
	return b
}

// Version numbers this revision of the definition (see Definition.Version).
func (b *Builder) Version(v int) *Builder { b.def.Version = v; return b }

// Trace makes engines record a trace step for every step of this definition.
func (b *Builder) Trace() *Builder { b.def.Trace = true; return b }

// State adds a top-level state (atomic until children or a kind are given).
func (b *Builder) State(name string) *StateBuilder {
	s := &State{Name: name, Pos: caller()}
	b.def.States = append(b.def.States, s)
	return &StateBuilder{s: s}
}

// Definition validates the structure (everything but action and guard names, which need a
// Registry: see Validate and NewEngine) and returns the definition.
func (b *Builder) Definition() (*Definition, error) {
	if err := Validate(b.def, nil); err != nil {
		return nil, err
	}
	return b.def, nil
}

// StateBuilder configures one state.
type StateBuilder struct{ s *State }

// Spec returns the state being built.
func (sb *StateBuilder) Spec() *State { return sb.s }

// State adds a child, making this a compound state (or, if parallel, adds a region).
func (sb *StateBuilder) State(name string) *StateBuilder {
	c := &State{Name: name, Pos: caller()}
	sb.s.States = append(sb.s.States, c)
	return &StateBuilder{s: c}
}

// Region adds an orthogonal region and makes this a parallel state.
func (sb *StateBuilder) Region(name string) *StateBuilder {
	sb.s.Parallel = true
	c := &State{Name: name, Pos: caller()}
	sb.s.States = append(sb.s.States, c)
	return &StateBuilder{s: c}
}

// Initial names the child entered by default.
func (sb *StateBuilder) Initial(name string) *StateBuilder { sb.s.Initial = name; return sb }

// Final makes this a final state with the given outcome.
func (sb *StateBuilder) Final(outcome string) *StateBuilder { sb.s.Final = outcome; return sb }

// History gives this compound state shallow history.
func (sb *StateBuilder) History() *StateBuilder { sb.s.History = true; return sb }

// DeepHistory gives this compound state deep history.
func (sb *StateBuilder) DeepHistory() *StateBuilder { sb.s.DeepHistory = true; return sb }

// EarlyExit lists outcomes that complete this parallel state's join at once.
func (sb *StateBuilder) EarlyExit(outcomes ...string) *StateBuilder {
	sb.s.EarlyExit = append(sb.s.EarlyExit, outcomes...)
	return sb
}

// Defer appends event kinds the state defers.
func (sb *StateBuilder) Defer(kinds ...string) *StateBuilder {
	sb.s.Defer = append(sb.s.Defer, kinds...)
	return sb
}

// Entry appends entry actions.
func (sb *StateBuilder) Entry(actions ...string) *StateBuilder {
	sb.s.Entry = append(sb.s.Entry, actions...)
	return sb
}

// Exit appends exit actions.
func (sb *StateBuilder) Exit(actions ...string) *StateBuilder {
	sb.s.Exit = append(sb.s.Exit, actions...)
	return sb
}

// On adds a transition on an event kind to target ("" for a targetless transition).
func (sb *StateBuilder) On(event, target string) *TransitionBuilder {
	t := &Transition{Event: event, Target: target, Pos: caller()}
	sb.s.On = append(sb.s.On, t)
	return &TransitionBuilder{t: t}
}

// After arms a timer on entry that takes a transition to target after d.
func (sb *StateBuilder) After(d time.Duration, target string) *TransitionBuilder {
	sb.s.Timeout = &Timeout{After: d, Transition: Transition{Target: target, Pos: caller()}}
	return &TransitionBuilder{t: &sb.s.Timeout.Transition}
}

// Choice adds a branch to this choice point: taken when guard passes ("" for the else, the
// last branch).
func (sb *StateBuilder) Choice(guard, target string) *TransitionBuilder {
	t := &Transition{Target: target, Guard: guard, Pos: caller()}
	sb.s.Choice = append(sb.s.Choice, t)
	return &TransitionBuilder{t: t}
}

// Select makes this a selector state running action (a Registry.Selector).
func (sb *StateBuilder) Select(action string) *StateBuilder {
	sb.s.Select = &Select{Action: action, Pos: caller()}
	return sb
}

// Case adds the case for label (ElseLabel for every other) to this selector state.
func (sb *StateBuilder) Case(label, target string) *TransitionBuilder {
	if sb.s.Select == nil {
		sb.s.Select = &Select{Pos: caller()}
	}
	c := &Case{Label: label, Transition: Transition{Target: target, Pos: caller()}}
	sb.s.Select.Cases = append(sb.s.Select.Cases, c)
	return &TransitionBuilder{t: &c.Transition}
}

// Invoke makes this state run inv (Pos is set to the call site); its completion transitions
// route on the child's outcome.
func (sb *StateBuilder) Invoke(inv Invoke) *StateBuilder {
	inv.Pos = caller()
	sb.s.Invoke = &inv
	return sb
}

// Done adds a completion transition.
func (sb *StateBuilder) Done(target string) *TransitionBuilder {
	t := &Transition{Target: target, Pos: caller()}
	sb.s.Done = append(sb.s.Done, t)
	return &TransitionBuilder{t: t}
}

// OnError sets the error transition.
func (sb *StateBuilder) OnError(target string) *TransitionBuilder {
	sb.s.OnError = &Transition{Target: target, Pos: caller()}
	return &TransitionBuilder{t: sb.s.OnError}
}

// TransitionBuilder configures one transition.
type TransitionBuilder struct{ t *Transition }

// Guard sets the guard.
func (tb *TransitionBuilder) Guard(name string) *TransitionBuilder { tb.t.Guard = name; return tb }

// Do appends actions.
func (tb *TransitionBuilder) Do(actions ...string) *TransitionBuilder {
	tb.t.Actions = append(tb.t.Actions, actions...)
	return tb
}

// Internal makes the transition internal.
func (tb *TransitionBuilder) Internal() *TransitionBuilder { tb.t.Internal = true; return tb }

// When restricts a completion transition to one child outcome.
func (tb *TransitionBuilder) When(outcome string) *TransitionBuilder {
	tb.t.Outcome = outcome
	return tb
}

// caller returns the position of the builder method's caller.
func caller() Pos {
	_, file, line, ok := runtime.Caller(2)
	if !ok {
		return Pos{}
	}
	return Pos{File: filepath.Base(file), Line: line}
}
