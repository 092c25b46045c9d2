package stead

import (
	"encoding/json"
	"time"
)

// Emit is an event to deliver to another execution (or to none: an empty Target is a broadcast
// that the relay acknowledges without publishing) after the step that produced it commits.
type Emit struct {
	Target string `json:"target,omitempty"`
	Event  Event  `json:"event"`
}

// TimerAction says whether a TimerOp arms or disarms a timer.
type TimerAction string

// The timer actions.
const (
	TimerSchedule TimerAction = "schedule"
	TimerCancel   TimerAction = "cancel"
)

// TimerOp arms or disarms the durable timer of one state path of the committing execution. An
// execution has at most one timer per path: scheduling a path again replaces its fire time;
// cancelling removes it whatever its fire time.
type TimerOp struct {
	Action TimerAction `json:"action"`
	Path   string      `json:"path"`
	FireAt time.Time   `json:"fire_at,omitzero"` // required for TimerSchedule
}

// Spawn is the intent to create a child execution. It commits with the parent's step; a relay
// creates the child afterwards, idempotently, from ChildID.
type Spawn struct {
	ChildID  string          `json:"child_id"`
	RootPath string          `json:"root_path"`
	Context  json.RawMessage `json:"context,omitempty"`
	// Trace is the trace context the child's start event carries, in Event.Trace's form (empty:
	// none): the spawning step's, so that the child joins its parent's trace whoever creates it,
	// the worker that committed the step or a relay after a crash.
	Trace string `json:"trace,omitempty"`
}

// TraceStep is one step of an execution's optional trace. Index is assigned by the store: it
// starts at 0 and grows by one per step, and it never changes once assigned, even after older
// steps fall out of the capped ring.
type TraceStep struct {
	Index     int64           `json:"index"`
	EventID   string          `json:"event_id,omitempty"`
	EventKind string          `json:"event_kind,omitempty"`
	From      string          `json:"from,omitempty"`
	To        string          `json:"to,omitempty"`
	Actions   []string        `json:"actions,omitempty"`
	Context   json.RawMessage `json:"context,omitempty"`
	At        time.Time       `json:"at,omitzero"`
}

// Bundle is every side effect of one step. Commit writes the execution and its bundle in one
// transaction: all of it lands or none of it does.
type Bundle struct {
	// Emits are written to the outbox in order; Commit returns their sequence numbers.
	Emits []Emit
	// ProcessedEventID, when set, records that the execution has applied that event (dedupe).
	ProcessedEventID string
	// AlsoProcessed are further events this commit applies, in order after ProcessedEventID: a
	// worker that applies several queued events of one execution in one step commits them as one
	// bundle, so that the execution is written once for all of them. It requires
	// ProcessedEventID; each id is checked as ProcessedEventID is and must be set; the ids are
	// distinct among themselves and from ProcessedEventID; there are at most MaxBatch of them.
	// The commit records every one of them processed, with ProcessedEventID, or none of them: a
	// lost compare-and-swap records none. The version advances by one per event the commit
	// applies (1 + len(AlsoProcessed)), as if each had been committed alone, so that a version
	// still counts an execution's steps and the keys of its actions (chart.ActionContext.Key) do
	// not depend on how its events were grouped into commits.
	AlsoProcessed []string
	// Spawns are child executions to create after commit.
	Spawns []Spawn
	// Timers arm and disarm durable timers, applied in order.
	Timers []TimerOp
	// Trace, when set, appends one step to the execution's trace ring.
	Trace *TraceStep
	// Attributes change the execution's attributes (Execution.Attributes): a value sets its key,
	// the zero AttrValue deletes it, and a key the map does not name keeps its value. The commit
	// stores the execution with the attributes these changes make of its own and rewrites the
	// backend's index of them in the same transaction; a commit without changes leaves the index
	// alone. A step sets them here; so does a control command.
	Attributes map[string]AttrValue
}

// StateOnly reports whether the bundle carries nothing but (optionally) processed event ids
// (ProcessedEventID and AlsoProcessed) and attribute changes: such a commit is a single call of
// PostgreSQL's state-only commit function (attribute changes ride behind it in the same round
// trip).
func (b *Bundle) StateOnly() bool {
	return len(b.Emits) == 0 && len(b.Spawns) == 0 && len(b.Timers) == 0 && b.Trace == nil
}
