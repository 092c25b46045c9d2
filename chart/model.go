package chart

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// System event kinds. The engine handles them itself; they never reach user transitions (except
// KindDone and KindError, which are the events that completion and error transitions see).
const (
	// KindStart moves a pending execution into its initial configuration. Its data, a JSON
	// object, is merged into the context. For a region child (RootPath set) only that region runs.
	KindStart = "stead.start"
	// KindCancel moves the execution to cancelled: it leaves its active states (their exit
	// actions run, innermost first), disarms their timers, cancels its unfinished children and
	// tells its parent. An operator's cancel (KindCancelRequest) queues one behind the backlog.
	KindCancel = "stead.cancel"
	// KindTimeout fires the timer of a state: data {"path": "<state path>"}. A timeout for a path
	// that is no longer active is ignored. Build it with TimeoutEvent.
	KindTimeout = "stead.timeout"
	// KindFinished tells a parent that a child finished: data
	// {"child_id": ..., "outcome": ..., "result": {...}, "error": ...}.
	KindFinished = "stead.finished"
	// KindDone is the event a completion transition sees: data {"state": ..., "outcome": ...}.
	KindDone = "stead.done"
	// KindError is the event an error transition sees: data {"state": ..., "action": ..., "error": ...}.
	KindError = "stead.error"
)

// Control kinds are an operator's commands (worker.Client.Control). They never travel an
// execution's queue: the client that issues one, or a worker's relay for one that cascades to a
// child through the outbox, applies it to the stored execution at once, as a compare-and-swap
// commit whose processed marker is the command's id, so that it takes effect even behind a
// backlog or a parked queue and applies once however often it is delivered.
//
// KindSuspend, KindResume and KindCancelRequest change only the status (and cascade to the
// unfinished children), so the worker applies them for every Machine. Engine.Control applies
// KindReset, KindSetState and KindRetry, which follow the definition.
const (
	// KindSuspend parks a running execution: its events wait, its timers fire into the parked
	// queue.
	KindSuspend = "stead.suspend"
	// KindResume runs a suspended execution again; what was parked is delivered in order.
	KindResume = "stead.resume"
	// KindCancelRequest starts a cooperative cancel: the execution becomes cancelling and queues a
	// KindCancel behind its backlog, which is drained unapplied until that event ends it.
	KindCancelRequest = "stead.cancel_request"
	// KindReset returns an execution to its initial configuration. Data: {"context": {...}}, the
	// context to start from (default: the one it started with).
	KindReset = "stead.reset"
	// KindSetState moves an execution to a state. Data: {"state": "<path>"}.
	KindSetState = "stead.set_state"
	// KindRetry applies a failed execution's dead letter again, from the state it was in.
	KindRetry = "stead.retry"
)

// IsReserved reports whether kind is one of the engine's own ("stead." and more): no definition
// may name one in a transition, so an event of such a kind sent from outside could only forge
// what the engine sends itself (a child's finish, a timer's timeout).
func IsReserved(kind string) bool { return strings.HasPrefix(kind, "stead.") }

// IsControl reports whether kind is a control kind.
func IsControl(kind string) bool {
	switch kind {
	case KindSuspend, KindResume, KindCancelRequest, KindReset, KindSetState, KindRetry:
		return true
	}
	return false
}

// Outcomes a final state commonly declares. Any identifier is allowed.
const (
	OutcomeSuccess   = "success"
	OutcomeFailure   = "failure"
	OutcomeCancelled = "cancelled"
)

// RegionResultsKey is the context key under which a parent finds the results (final contexts)
// of its regions, by region name, once a join completes.
const RegionResultsKey = "region_results"

// Pos is where something was declared: a file position for parsed definitions, the Go call site
// for built ones. The zero Pos means unknown.
type Pos struct {
	File string
	Line int
	Col  int
}

func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Definition is a statechart: a tree of states with transitions between them. It is plain data;
// Validate checks it and NewEngine compiles it. Build one with New or load one with Parse or
// LoadFile.
type Definition struct {
	// ID names the definition; executions refer to it by Execution.DefinitionID.
	ID string
	// Version, when positive, numbers this revision of the definition. Its executions then
	// record "<id>@<version>" as their DefinitionID (see VersionedID), so each keeps running on
	// the revision it started on while new ones start on the newest a worker knows.
	Version int
	// Trace asks engines running this definition to record a trace step for every step.
	Trace bool
	// Initial is the name of the top-level state a started execution enters.
	Initial string
	// States are the top-level states.
	States []*State
	// Context declares the keys of the execution context, with their types, defaults and
	// whether they are required. When it declares any, the context an execution starts with is
	// checked and defaulted (Engine.PrepareContext, which worker.Client.Create calls; a start
	// that breaks it fails the execution), and an action that sets an undeclared key, a value of
	// the wrong type, or deletes a required key fails as an action error.
	Context []*ContextKey
	// Returns lists the context keys an execution of this definition hands back to the
	// execution that invoked it (Invoke) when it finishes; the others stay its own.
	Returns []string
	// TTL, when positive, is how long an execution may live: a durable timer (TTLTimerPath)
	// armed at start ends it with OutcomeExpired when it fires. With RearmTTL every event the
	// execution applies (timeouts aside) pushes the deadline back to TTL after it.
	TTL      time.Duration
	RearmTTL bool
	// Retry gives actions, by name, a retry policy: wherever such an action runs, a failure
	// that has attempts left is retried after a backoff instead of taking the error transition.
	// A policy of one attempt (NoRetry, "none" in YAML) turns retrying off for that action.
	Retry map[string]*Retry
	// DefaultRetry, when set, is the policy of every action Retry does not name ("retry:
	// {default: ...}" in YAML; NoRetry, "retry: none", turns the default off). Nil leaves it to
	// the engine: WithDefaultRetry, else DefaultRetry().
	DefaultRetry *Retry
	// Limit, when set, bounds how many executions of a key run a step at once and how often
	// (see Limit); "limit:" in YAML.
	Limit *Limit
	// Schedules declares timetables that start executions of this definition (see Schedule);
	// "schedules:" in YAML.
	Schedules []*Schedule
	Pos       Pos
}

// Retry is an action's retry policy. When the action fails (returns an error or panics) and
// attempts are left, the step that ran it is discarded — nothing it did is committed — and the
// event is kept at the head of Execution.Deferred while a durable timer (path RetryTimerPath)
// waits out the backoff; the timer's event applies it again, from the state the execution was in.
// Events that arrive meanwhile wait behind it, in order. The last attempt's failure takes the
// error transition, or fails the execution, as any action error does.
//
// The delay before attempt n+1 is Backoff·Factor^(n-1), capped at Max, less a jitter share of
// it: Jitter·u·delay, where u in [0, 1) is derived from the execution id, the event id and n, so
// that executions retrying together spread out while a replay waits exactly as long.
type Retry struct {
	// Attempts counts every run of the action's step, the first included: at least 2, or 1 for
	// a policy that never retries (NoRetry).
	Attempts int
	// Backoff is the delay before the second attempt.
	Backoff time.Duration
	// Factor multiplies the delay after each attempt (at least 1; 0 means 2).
	Factor float64
	// Max caps the delay (0: no cap but MaxRetryDelay).
	Max time.Duration
	// Jitter is the share of each delay, in [0, 1], that may be taken off.
	Jitter float64
	Pos    Pos
}

// NoRetry returns the policy that never retries: a failure takes the error transition, or fails
// the execution, at once. Give it to an action whose errors are never transient (a refused card,
// a validation), or as Definition.DefaultRetry to turn the default off.
func NoRetry() *Retry { return &Retry{Attempts: 1} }

// DefaultRetry returns the policy of every action that has none of its own, unless the
// definition (Definition.DefaultRetry) or the engine (WithDefaultRetry) says otherwise: five
// attempts, 1 s, 2 s, 4 s and 8 s apart (less up to a fifth of jitter), so about 15 s in all.
// That outlasts the blips a remote call meets — a 503 while a service restarts, a dropped
// connection, a failover of a few seconds — while an error that will not go away (a bug, a
// refusal) still fails the execution, loudly, within seconds rather than holding it for minutes.
// The events that arrive meanwhile wait behind the retry, in order.
func DefaultRetry() Retry {
	return Retry{Attempts: 5, Backoff: time.Second, Factor: 2, Max: 30 * time.Second, Jitter: 0.2}
}

// MaxRetryAttempts bounds Retry.Attempts, MaxRetryDelay any one delay.
const (
	MaxRetryAttempts = 1000
	MaxRetryDelay    = 30 * 24 * time.Hour
)

// MaxDeferred bounds Execution.Deferred: an event that would be kept beyond it fails the
// execution instead, so a state that defers forever cannot grow the record without bound.
const MaxDeferred = 1000

// OutcomeExpired is the outcome of an execution whose TTL ran out: it is done, its active
// states were left (their exit actions ran, innermost first, as for a cancel), their timers
// disarmed and its children cancelled; its ActivePath is the state it was in.
const OutcomeExpired = "expired"

// TTLTimerPath is the timer path of an execution's time to live.
const TTLTimerPath = "@ttl"

// RetryTimerPath is the timer path of a pending retry. It is not a state path: state names are
// identifiers, which never hold '@'.
const RetryTimerPath = "@retry"

// State is one node of the tree. Its kind follows from its fields: Final set makes a final
// state, Parallel a parallel state whose States are its regions, children (States) a compound
// state, and none of these an atomic state.
type State struct {
	Name string
	// Initial names the child a compound state (or a region) enters by default.
	Initial string
	// States are the children of a compound state, or the regions of a parallel one. Each
	// region is a compound state run by a child execution of its own.
	States []*State
	// Parallel makes the state's children orthogonal regions.
	Parallel bool
	// EarlyExit lists outcomes that complete a parallel state's join as soon as one region
	// finishes with one of them; the other regions are cancelled.
	EarlyExit []string
	// Final, when set, makes this a final state with that outcome.
	Final string
	// History makes a compound state remember its last active child and re-enter it, instead of
	// its initial child, whenever it is entered without an explicit child target (shallow history).
	History bool
	// DeepHistory makes a compound state remember its last active leaf, however deep, and
	// re-enter the whole chain down to it (each state's entry actions run, outermost first)
	// instead of following initial children. A state has shallow or deep history, not both.
	DeepHistory bool
	// Defer lists event kinds this state postpones while it is active: one that no transition of
	// a state inside it (or of itself) takes is kept in Execution.Deferred instead of being
	// handled further out or ignored, and is delivered again, in order, once a state is entered
	// (the same step), unless the configuration still defers it.
	Defer []string
	// Entry and Exit name actions run, in order, when the state is entered or exited.
	Entry []string
	Exit  []string
	// On are the transitions taken on events, tried in order; the first whose guard passes wins.
	On []*Transition
	// Timeout arms a durable timer on entry; the transition fires when it expires.
	Timeout *Timeout
	// Done are completion transitions of a compound or parallel state, tried in order when a
	// child final state is reached (or the join of a parallel state completes).
	Done []*Transition
	// Choice makes the state a choice point: entering it takes at once the first branch whose
	// guard passes, in order; the last branch has no guard (the else), so one always does. A
	// choice point holds nothing else but an error transition; an execution never rests in it.
	Choice []*Transition
	// Select makes the state a selector: once it is entered (its entry actions run), its
	// action runs and the label it returns (ActionResult.Label) picks the case to take. An
	// execution never rests in it either.
	Select *Select
	// Invoke makes the state run another definition as a child execution (or, with ForEach,
	// one per item of a context collection) while it is active. The state's completion
	// transitions route on the child's outcome once it finishes; leaving the state cancels it.
	Invoke *Invoke
	// OnError is taken when an action of this state (or of a state or transition inside it)
	// fails; without one the error goes to the enclosing state, and at the top fails the execution.
	OnError *Transition
	Pos     Pos
}

// Transition moves the active configuration from its source state to Target.
type Transition struct {
	// Event is the kind of event that triggers it (On transitions only).
	Event string
	// Target names the destination: a state name or dotted path, resolved from the source's
	// parent outward to the top level. Empty means a targetless transition: actions run, no
	// state is exited or entered.
	Target string
	// Internal keeps the source state active when the target is one of its descendants: the
	// source is neither exited nor re-entered. Without it a transition is external: a
	// transition to the source itself (a self transition) exits and re-enters it.
	Internal bool
	// Guard names a guard that must return true for the transition to be taken.
	Guard string
	// Actions run between exiting and entering.
	Actions []string
	// Outcome restricts a completion transition to a child outcome.
	Outcome string
	Pos     Pos
}

// ContextKey declares one context key.
type ContextKey struct {
	Name string
	// Type is one of TypeString, TypeNumber, TypeInteger, TypeBoolean, TypeList, TypeObject or
	// TypeAny (any JSON value, null included; the other types refuse null).
	Type string
	// Default, a JSON value of Type, is set at start when the key is missing.
	Default json.RawMessage
	// Required refuses a start context without the key (it cannot have a Default).
	Required bool
	Pos      Pos
}

// The context key types.
const (
	TypeString  = "string"
	TypeNumber  = "number"
	TypeInteger = "integer"
	TypeBoolean = "boolean"
	TypeList    = "list"
	TypeObject  = "object"
	TypeAny     = "any"
)

// Invoke is what an invoking state runs. The child's id is "<parent id>:<state path>:<n>"
// ("...:<n>:<i>" for item i of a fan-out), n counting the entries of the state, so a re-entry
// starts fresh children. Its start context holds the Input keys copied from the parent's context
// (and, for a fan-out, the item under As and its index under "index"). When the child finishes,
// the keys its definition Returns are copied into the parent's context (a fan-out collects them,
// in item order, as a list under Results) and the state's completion transitions see its
// outcome: for a fan-out, success when every child succeeded, else the first other outcome in
// item order.
type Invoke struct {
	// Definition is the id of the definition the child runs (a machine the worker knows).
	Definition string
	// Input maps a child context key to the parent context key it is copied from.
	Input map[string]string
	// ForEach names a parent context key holding a JSON array: one child per item.
	ForEach string
	// As is the child context key of the item (default "item").
	As string
	// Results is the parent context key of a fan-out's results (default "results").
	Results string
	// FailFast completes a fan-out at the first child that does not succeed, cancelling the
	// others.
	FailFast bool
	Pos      Pos
}

// MaxFanOut bounds the children of one fan-out; a longer collection is an error of the state.
const MaxFanOut = 1000

// Select is a selector state's table: the action (registered with Registry.Selector, which
// declares the labels it returns) and a transition per label. A case labelled ElseLabel takes
// every label without a case of its own; without one, the cases must cover every declared label.
type Select struct {
	Action string
	Cases  []*Case
	Pos    Pos
}

// Case is the transition a selector takes for one label.
type Case struct {
	Label string
	Transition
}

// ElseLabel is the case label that matches what no other case does.
const ElseLabel = "else"

// Timeout is a state's timer: After the state is entered, the transition is taken unless the
// state was left before.
type Timeout struct {
	After time.Duration
	Transition
}

// IsCompound reports whether s has children and is not parallel.
func (s *State) IsCompound() bool { return len(s.States) > 0 && !s.Parallel }

// IsFinal reports whether s is a final state.
func (s *State) IsFinal() bool { return s.Final != "" }

// Walk calls fn for every state of d, parents before children, with its dotted path.
func (d *Definition) Walk(fn func(path string, s *State)) {
	var walk func(prefix string, states []*State)
	walk = func(prefix string, states []*State) {
		for _, s := range states {
			if s == nil {
				continue
			}
			p := joinPath(prefix, s.Name)
			fn(p, s)
			walk(p, s.States)
		}
	}
	walk("", d.States)
}

// State returns the state at a dotted path, or nil.
func (d *Definition) State(path string) *State {
	states := d.States
	var found *State
	for name := range strings.SplitSeq(path, ".") {
		found = nil
		for _, s := range states {
			if s != nil && s.Name == name {
				found = s
				break
			}
		}
		if found == nil {
			return nil
		}
		states = found.States
	}
	return found
}

// VersionedID is the DefinitionID executions of d record: the id, or "<id>@<version>".
func (d *Definition) VersionedID() string {
	if d.Version <= 0 {
		return d.ID
	}
	return d.ID + "@" + strconv.Itoa(d.Version)
}

// SplitVersion splits a DefinitionID into the definition id and its version (0 for none).
func SplitVersion(definitionID string) (id string, version int) {
	i := strings.LastIndexByte(definitionID, '@')
	if i <= 0 {
		return definitionID, 0
	}
	v, err := strconv.Atoi(definitionID[i+1:])
	if err != nil || v <= 0 || strconv.Itoa(v) != definitionID[i+1:] {
		return definitionID, 0
	}
	return definitionID[:i], v
}

func joinPath(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func parentPath(p string) string {
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}
