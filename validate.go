package stead

import (
	"fmt"
	"slices"

	"github.com/steadhq/stead/internal/check"
)

// Size limits every backend enforces alike.
const (
	// MaxIDLen is the longest identifier (ids, kinds, state paths) in bytes.
	MaxIDLen = check.MaxIDLen
	// MaxPayload is the largest JSON document (a context, event data, a trace step) in bytes.
	MaxPayload = check.MaxPayload
	// MaxRecord is the largest encoded execution in bytes.
	MaxRecord = 4 << 20
	// MaxPriority is the highest execution priority; 0 is the lowest.
	MaxPriority = 9
	// DefaultListLimit is the page size when a ListFilter leaves Limit at 0.
	DefaultListLimit = check.DefaultLimit
	// MaxListLimit is the largest page, claim or batch a store accepts.
	MaxListLimit = check.MaxLimit
	// MaxBatch is the largest CommitBatch or LoadForEvents a store accepts.
	MaxBatch = 1000
	// MaxTraceLen is the longest Event.Trace in bytes: a traceparent (55 bytes), the separator
	// and a tracestate of W3C's 32 members fit with room to spare.
	MaxTraceLen = 1024
)

// Validate checks every field of the execution and returns an error wrapping ErrInvalid for the
// first one that a store would refuse.
func (e *Execution) Validate() error {
	if e == nil {
		return check.Invalidf("execution is nil")
	}
	if err := check.ID("execution id", e.ID); err != nil {
		return err
	}
	if err := check.ID("definition id", e.DefinitionID); err != nil {
		return err
	}
	if !e.Status.Valid() {
		return check.Invalidf("execution %q: unknown status %q", e.ID, e.Status)
	}
	if e.Version < 0 {
		return check.Invalidf("execution %q: negative version %d", e.ID, e.Version)
	}
	if e.Priority < 0 || e.Priority > MaxPriority {
		return check.Invalidf("execution %q: priority %d outside 0..%d", e.ID, e.Priority, MaxPriority)
	}
	// An array, not a map: checked in a fixed order (the error names the same field every time)
	// and without allocating on every commit.
	for _, f := range [...]struct{ name, v string }{
		{"outcome", e.Outcome}, {"active path", e.ActivePath},
		{"parent id", e.ParentID}, {"child id", e.ChildID}, {"root path", e.RootPath},
	} {
		if err := check.Text(f.name, f.v); err != nil {
			return err
		}
	}
	if err := check.TextMax("error", e.Error, check.MaxMessageLen); err != nil {
		return err
	}
	if err := check.JSONObject("context", e.Context); err != nil {
		return err
	}
	for k, v := range e.History {
		if err := check.ID("history key", k); err != nil {
			return err
		}
		if err := check.Text("history value", v); err != nil {
			return err
		}
	}
	for k, c := range e.Children {
		if err := check.ID("child key", k); err != nil {
			return err
		}
		if err := check.Text("child root path", c.RootPath); err != nil {
			return err
		}
		if err := check.Text("child outcome", c.Outcome); err != nil {
			return err
		}
		if err := check.Text("child key", c.Key); err != nil {
			return err
		}
		if err := check.JSON("child result", c.Result); err != nil {
			return err
		}
	}
	for k, at := range e.Timers {
		if err := check.ID("timer path", k); err != nil {
			return err
		}
		if at.IsZero() {
			return check.Invalidf("execution %q: timer %q without a fire time", e.ID, k)
		}
	}
	for k, tr := range e.TimerTraces {
		if err := check.ID("timer trace path", k); err != nil {
			return err
		}
		if err := checkTrace(tr); err != nil {
			return fmt.Errorf("timer %q: %w", k, err)
		}
	}
	for k := range e.InvokeSeq {
		if err := check.ID("invoke seq key", k); err != nil {
			return err
		}
	}
	for i := range e.Deferred {
		if err := e.Deferred[i].Validate(); err != nil {
			return fmt.Errorf("deferred event %d: %w", i, err)
		}
	}
	if err := check.JSONObject("start context", e.StartContext); err != nil {
		return err
	}
	if d := e.DeadLetter; d != nil {
		if err := d.validate(); err != nil {
			return fmt.Errorf("execution %q: dead letter: %w", e.ID, err)
		}
	}
	if err := checkAttributes(e.Attributes); err != nil {
		return fmt.Errorf("execution %q: %w", e.ID, err)
	}
	return nil
}

func (d *DeadLetter) validate() error {
	if err := d.Event.Validate(); err != nil {
		return err
	}
	if !d.Status.Valid() {
		return check.Invalidf("unknown status %q", d.Status)
	}
	if err := check.Text("active path", d.ActivePath); err != nil {
		return err
	}
	if err := check.JSONObject("context", d.Context); err != nil {
		return err
	}
	for k, v := range d.History {
		if err := check.ID("history key", k); err != nil {
			return err
		}
		if err := check.Text("history value", v); err != nil {
			return err
		}
	}
	for k, at := range d.Timers {
		if err := check.ID("timer path", k); err != nil {
			return err
		}
		if at.IsZero() {
			return check.Invalidf("timer %q without a fire time", k)
		}
	}
	return nil
}

// Validate checks an event.
func (ev *Event) Validate() error {
	if err := check.ID("event id", ev.ID); err != nil {
		return err
	}
	if err := check.ID("event kind", ev.Kind); err != nil {
		return err
	}
	if err := checkTrace(ev.Trace); err != nil {
		return err
	}
	return check.JSON("event data", ev.Data)
}

// checkTrace refuses a trace carrier that is too long or holds anything but printable ASCII, the
// alphabet of traceparent and tracestate: what a store keeps is then safe in every column type,
// log line and header it may be copied to.
func checkTrace(tr string) error {
	if len(tr) > MaxTraceLen {
		return check.Invalidf("event trace is %d bytes, more than %d", len(tr), MaxTraceLen)
	}
	for i := 0; i < len(tr); i++ {
		if c := tr[i]; c < 0x20 || c > 0x7e {
			return check.Invalidf("event trace holds byte 0x%02x at %d: only printable ASCII is allowed", c, i)
		}
	}
	return nil
}

// Validate checks an event reference, as LoadForEvent, LoadForEvents and IsProcessed take it.
func (r EventRef) Validate() error {
	if err := check.ID("execution id", r.ExecutionID); err != nil {
		return err
	}
	return check.ID("event id", r.EventID)
}

// Validate checks every item of the bundle and returns an error wrapping ErrInvalid for the first
// one a store would refuse.
func (b *Bundle) Validate() error {
	for i := range b.Emits {
		if err := check.Text("emit target", b.Emits[i].Target); err != nil {
			return fmt.Errorf("emit %d: %w", i, err)
		}
		if err := b.Emits[i].Event.Validate(); err != nil {
			return fmt.Errorf("emit %d: %w", i, err)
		}
	}
	if err := check.Text("processed event id", b.ProcessedEventID); err != nil {
		return err
	}
	if err := checkAlsoProcessed(b.ProcessedEventID, b.AlsoProcessed); err != nil {
		return err
	}
	for i, s := range b.Spawns {
		if err := check.ID("spawn child id", s.ChildID); err != nil {
			return fmt.Errorf("spawn %d: %w", i, err)
		}
		if err := check.Text("spawn root path", s.RootPath); err != nil {
			return fmt.Errorf("spawn %d: %w", i, err)
		}
		if err := check.JSONObject("spawn context", s.Context); err != nil {
			return fmt.Errorf("spawn %d: %w", i, err)
		}
		if err := checkTrace(s.Trace); err != nil {
			return fmt.Errorf("spawn %d: %w", i, err)
		}
	}
	for i, op := range b.Timers {
		if err := op.Validate(); err != nil {
			return fmt.Errorf("timer op %d: %w", i, err)
		}
	}
	if b.Trace != nil {
		if err := b.Trace.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// checkAlsoProcessed checks Bundle.AlsoProcessed: only with a processed event id, at most
// MaxBatch ids, each set and valid, none repeated and none equal to the processed event id.
func checkAlsoProcessed(first string, also []string) error {
	if len(also) == 0 {
		return nil
	}
	if first == "" {
		return check.Invalidf("%d also processed event ids without a processed event id", len(also))
	}
	if len(also) > MaxBatch {
		return check.Invalidf("%d also processed event ids, more than %d", len(also), MaxBatch)
	}
	// A worker sends a handful: comparing them pairwise allocates nothing and is faster than a
	// map up to a few dozen.
	var seen map[string]struct{}
	if len(also) > 32 {
		seen = make(map[string]struct{}, len(also))
	}
	for i, id := range also {
		if err := check.ID("also processed event id", id); err != nil {
			return fmt.Errorf("also processed %d: %w", i, err)
		}
		if id == first {
			return check.Invalidf("also processed %d: event id %q is the processed event id", i, id)
		}
		repeated := false
		if seen != nil {
			_, repeated = seen[id]
			seen[id] = struct{}{}
		} else {
			repeated = slices.Contains(also[:i], id)
		}
		if repeated {
			return check.Invalidf("also processed %d: event id %q appears twice", i, id)
		}
	}
	return nil
}

// Validate checks a timer op.
func (op *TimerOp) Validate() error {
	if err := check.ID("timer path", op.Path); err != nil {
		return err
	}
	switch op.Action {
	case TimerSchedule:
		if op.FireAt.IsZero() {
			return check.Invalidf("timer %q: schedule without a fire time", op.Path)
		}
	case TimerCancel:
	default:
		return check.Invalidf("timer %q: unknown action %q", op.Path, op.Action)
	}
	return nil
}

// Validate checks a trace step.
func (t *TraceStep) Validate() error {
	for _, f := range [...]struct{ name, v string }{
		{"trace event id", t.EventID}, {"trace event kind", t.EventKind}, {"trace from", t.From}, {"trace to", t.To},
	} {
		if err := check.Text(f.name, f.v); err != nil {
			return err
		}
	}
	for _, a := range t.Actions {
		if err := check.Text("trace action", a); err != nil {
			return err
		}
	}
	return check.JSON("trace context", t.Context)
}
