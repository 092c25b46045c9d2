package stead

import (
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// Status is the lifecycle of an execution.
type Status string

// The statuses an execution moves through.
const (
	StatusPending    Status = "pending"    // created, not started
	StatusRunning    Status = "running"    // started, accepting events
	StatusDone       Status = "done"       // reached a final state; Outcome says which
	StatusFailed     Status = "failed"     // an action failed with no error transition; Error says why
	StatusCancelling Status = "cancelling" // a cancel is draining the backlog
	StatusCancelled  Status = "cancelled"  // cancelled
	StatusSuspended  Status = "suspended"  // paused by an operator
)

// Pending, running, done and failed are what steps produce. Suspended, cancelling and cancelled
// come from an operator's control commands (worker.Client.Control): a worker parks the events of
// a suspended execution, drains those of a cancelling one up to the cancel's own event, and drops
// those of a cancelled one.

// Valid reports whether s is one of the declared statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusRunning, StatusDone, StatusFailed, StatusCancelling, StatusCancelled, StatusSuspended:
		return true
	}
	return false
}

// Finished reports whether s is an end state: done, failed or cancelled.
func (s Status) Finished() bool {
	return s == StatusDone || s == StatusFailed || s == StatusCancelled
}

// ChildState is the parent's bookkeeping for one child execution (an orthogonal region run as a
// child): the join waits until every child it expects has finished.
type ChildState struct {
	RootPath string          `json:"root_path"`
	Finished bool            `json:"finished,omitempty"`
	Outcome  string          `json:"outcome,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Key      string          `json:"key,omitempty"`
}

// Execution is the durable state of one statechart run. The store persists it whole; a few fields
// (status, outcome, active path, parent, times) are also kept in columns so listing never reads the
// whole record.
type Execution struct {
	ID           string `json:"id"`
	DefinitionID string `json:"definition_id"`
	Status       Status `json:"status"`
	Outcome      string `json:"outcome,omitempty"`
	Error        string `json:"error,omitempty"`
	// ActivePath is the path of the active leaf state, empty before start.
	ActivePath string `json:"active_path,omitempty"`
	// History maps a compound state's path to its last active child (shallow history) or its
	// last active leaf (deep history).
	History map[string]string `json:"history,omitempty"`
	// Context is the user data of the run, a JSON object.
	Context json.RawMessage `json:"context,omitempty"`
	// Children is the join state of the child executions this one waits for, by child id.
	Children map[string]ChildState `json:"children,omitempty"`
	// ParentID and ChildID are set on a child: whom to notify, and its key in the parent.
	ParentID string `json:"parent_id,omitempty"`
	ChildID  string `json:"child_id,omitempty"`
	// RootPath is the state this execution runs from: empty for a whole machine, the region's
	// path for a region child.
	RootPath string `json:"root_path,omitempty"`
	// InvokeSeq counts entries per spawning state so that every entry gets fresh child ids.
	InvokeSeq map[string]int `json:"invoke_seq,omitempty"`
	// Timers holds the fire time of each timer the execution has armed, by state path. It
	// mirrors the store's timer rows so that a timeout fired for an earlier arming of a state
	// (the state was left and re-entered meanwhile) can be told apart and ignored.
	Timers map[string]time.Time `json:"timers,omitempty"`
	// TimerTraces holds, by state path, the W3C trace context (as in Event.Trace) of the step
	// that armed the timer, so that its timeout, fired by whichever worker sweeps it, joins that
	// trace. Only a traced worker writes it; a path without a timer has no entry.
	TimerTraces map[string]string `json:"timer_traces,omitempty"`
	// Priority weights transport claims (0 is normal); children inherit it.
	Priority int `json:"priority,omitempty"`
	// Deferred holds, in order, events the execution keeps for later: those an active state
	// defers, and those waiting behind a pending retry (the retried event first). The engine
	// delivers them again when it enters states, or when the retry has run.
	Deferred []Event `json:"deferred,omitempty"`
	// StartContext is the context the execution started with (its created context merged with the
	// start event's data), which a reset restores when the operator gives no context. Empty means
	// the empty object.
	StartContext json.RawMessage `json:"start_context,omitempty"`
	// DeadLetter is set while the execution is failed: the event that failed it and the state it
	// was in when that event arrived, so that a retry can apply the event again from there.
	DeadLetter *DeadLetter `json:"dead_letter,omitempty"`
	// Attributes are the execution's searchable labels (at most MaxAttributes; keys as
	// CheckAttrKey says), which Store.List and Store.Count filter by (ListFilter.Attributes). Set
	// them before the first commit; after it, change them through Bundle.Attributes, so that the
	// backend rewrites its index of them only in the commits that change them. A commit stores
	// the map the bundle's changes make of this one.
	Attributes map[string]AttrValue `json:"attributes,omitempty"`
	// Version is the compare-and-swap token: 0 for a new execution, bumped by every commit.
	Version    int64     `json:"version"`
	CreatedAt  time.Time `json:"created_at,omitzero"`
	UpdatedAt  time.Time `json:"updated_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// Clone returns a deep copy of e, so that a caller can hand an execution to a store or an engine
// and keep its own copy untouched.
func (e *Execution) Clone() *Execution {
	if e == nil {
		return nil
	}
	c := *e
	c.History = maps.Clone(e.History)
	c.Context = slices.Clone(e.Context)
	if e.Children != nil {
		c.Children = make(map[string]ChildState, len(e.Children))
		for k, v := range e.Children {
			v.Result = slices.Clone(v.Result)
			c.Children[k] = v
		}
	}
	c.InvokeSeq = maps.Clone(e.InvokeSeq)
	c.Timers = maps.Clone(e.Timers)
	c.TimerTraces = maps.Clone(e.TimerTraces)
	if e.Deferred != nil {
		c.Deferred = make([]Event, len(e.Deferred))
		for i, ev := range e.Deferred {
			ev.Data = slices.Clone(ev.Data)
			c.Deferred[i] = ev
		}
	}
	c.StartContext = slices.Clone(e.StartContext)
	c.DeadLetter = e.DeadLetter.Clone()
	c.Attributes = maps.Clone(e.Attributes)
	return &c
}

// DeadLetter is what a failed execution keeps so that an operator can retry it: the event whose
// step failed it, and the status, active path, context, history and armed timers the execution
// had when that event arrived (a failing step may have changed them half-way before it failed).
type DeadLetter struct {
	Event      Event                `json:"event"`
	Status     Status               `json:"status"`
	ActivePath string               `json:"active_path,omitempty"`
	Context    json.RawMessage      `json:"context,omitempty"`
	History    map[string]string    `json:"history,omitempty"`
	Timers     map[string]time.Time `json:"timers,omitempty"`
}

// Clone returns a deep copy of d (nil for nil).
func (d *DeadLetter) Clone() *DeadLetter {
	if d == nil {
		return nil
	}
	c := *d
	c.Event.Data = slices.Clone(d.Event.Data)
	c.Context = slices.Clone(d.Context)
	c.History = maps.Clone(d.History)
	c.Timers = maps.Clone(d.Timers)
	return &c
}

// Summary is what listing returns: the columns, never the context or history.
type Summary struct {
	ID           string    `json:"id"`
	DefinitionID string    `json:"definition_id"`
	Status       Status    `json:"status"`
	Outcome      string    `json:"outcome,omitempty"`
	ActivePath   string    `json:"active_path,omitempty"`
	ParentID     string    `json:"parent_id,omitempty"`
	Version      int64     `json:"version"`
	CreatedAt    time.Time `json:"created_at,omitzero"`
	UpdatedAt    time.Time `json:"updated_at,omitzero"`
	FinishedAt   time.Time `json:"finished_at,omitzero"`
	// Attributes are the execution's attributes when the listing asked for them
	// (ListFilter.WithAttributes), and nil otherwise or when it has none.
	Attributes map[string]AttrValue `json:"attributes,omitempty"`
}

// Summarize returns the listing view of e, without its attributes (a listing carries them only
// when asked).
func (e *Execution) Summarize() Summary {
	return Summary{
		ID: e.ID, DefinitionID: e.DefinitionID, Status: e.Status, Outcome: e.Outcome,
		ActivePath: e.ActivePath, ParentID: e.ParentID, Version: e.Version,
		CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt, FinishedAt: e.FinishedAt,
	}
}

// Event is something that happened to an execution. Its ID is the dedupe key: an execution
// applies each event id at most once.
type Event struct {
	ID        string          `json:"id"`
	Kind      string          `json:"kind"`
	Data      json.RawMessage `json:"data,omitempty"`
	CreatedAt time.Time       `json:"created_at,omitzero"`
	// Trace is the W3C trace context of whatever sent the event — a traceparent header value,
	// optionally followed by ";" and a tracestate value — so that the step it causes, on any
	// host, joins the sender's trace. It travels wherever the event is stored (outbox rows,
	// transport messages) and is empty when tracing is off. The store checks only its size and
	// alphabet (printable ASCII, at most MaxTraceLen bytes); a malformed value is ignored by the
	// propagator, never refused by a step.
	Trace string `json:"trace,omitempty"`
}
