package stead

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/steadhq/stead/internal/check"
)

// MaxLease bounds a relay's lease, so that a typo cannot hide a row for years.
const MaxLease = 7 * 24 * time.Hour

// PrepareWrite checks exe and the bundle of its step and returns the Write a Backend commits:
// exe at its next version with every time in UTC at microsecond precision, its record, and the
// bundle normalised (see Write). exe and b are not changed. Store.Commit calls it; a backend's own
// entry points (a commit inside the application's transaction) call it too, so that they refuse
// exactly what the Store refuses. Bad input is an error wrapping ErrInvalid.
func PrepareWrite(exe *Execution, b Bundle) (*Write, error) {
	if exe == nil {
		return nil, check.Invalidf("execution is nil")
	}
	if exe.Version < 0 || exe.Version == math.MaxInt64 {
		return nil, check.Invalidf("execution %q: version %d outside 0..%d", exe.ID, exe.Version, int64(math.MaxInt64-1))
	}
	next, err := normalizeExecution(exe)
	if err != nil {
		return nil, fmt.Errorf("execution %q: %w", exe.ID, err)
	}
	if next.Attributes, err = applyAttributes(exe.Attributes, b.Attributes); err != nil {
		return nil, fmt.Errorf("execution %q: %w", exe.ID, err)
	}
	nb, err := normalizeBundle(b)
	if err != nil {
		return nil, fmt.Errorf("execution %q: %w", exe.ID, err)
	}
	steps := 1 + int64(len(nb.AlsoProcessed)) // one version per event applied
	if exe.Version > math.MaxInt64-steps {
		return nil, check.Invalidf("execution %q: version %d leaves no room for %d more", exe.ID, exe.Version, steps)
	}
	next.Version = exe.Version + steps
	record, err := EncodeExecution(next)
	if err != nil {
		return nil, err
	}
	replace := len(b.Attributes) > 0 || (exe.Version == 0 && len(next.Attributes) > 0)
	return &Write{Execution: next, Expected: exe.Version, Record: record, Bundle: nb, ReplaceAttributes: replace}, nil
}

// Committed is what a commit of w did, once a backend applied it and returned seqs: the new
// version and the seqs, which must be one per emit (an error otherwise: the backend broke the
// contract). A backend's own entry points use it to answer as the Store does.
func (w *Write) Committed(seqs []int64) (Committed, error) {
	if len(seqs) != len(w.Bundle.Emits) {
		return Committed{}, fmt.Errorf("stead: commit %q: the backend returned %d sequence numbers for %d emits",
			w.Execution.ID, len(seqs), len(w.Bundle.Emits))
	}
	if len(seqs) == 0 {
		seqs = nil
	}
	return Committed{Version: w.Execution.Version, Seqs: seqs}, nil
}

// Writes are the valid writes of a batch, with the position of each in the caller's items.
type Writes struct {
	W   []*Write
	pos []int
}

// PrepareBatch checks the items of a CommitBatch: it returns the writes to send to the backend
// (in item order, at most one per execution id) and the results with the error of every item
// that was refused. An error of its own (more than MaxBatch items) refuses the whole batch.
func PrepareBatch(items []CommitItem) (Writes, []CommitResult, error) {
	if len(items) > MaxBatch {
		return Writes{}, nil, check.Invalidf("batch of %d commits, more than %d", len(items), MaxBatch)
	}
	results := make([]CommitResult, len(items))
	ws := Writes{W: make([]*Write, 0, len(items)), pos: make([]int, 0, len(items))}
	seen := make(map[string]bool, len(items))
	for i := range items {
		it := &items[i]
		if it.Execution == nil {
			results[i].Err = check.Invalidf("item %d: execution is nil", i)
			continue
		}
		// The first item of an id is the one that counts, valid or not.
		if seen[it.Execution.ID] {
			results[i].Err = check.Invalidf("item %d: execution %q appears twice in one batch", i, it.Execution.ID)
			continue
		}
		seen[it.Execution.ID] = true
		w, err := PrepareWrite(it.Execution, it.Bundle)
		if err != nil {
			results[i].Err = fmt.Errorf("item %d: %w", i, err)
			continue
		}
		ws.W = append(ws.W, w)
		ws.pos = append(ws.pos, i)
	}
	return ws, results, nil
}

// Len is how many writes the batch sends.
func (ws Writes) Len() int { return len(ws.W) }

// Results folds what the backend answered for ws.W into results (from PrepareBatch), filling in
// each winner's new version.
func (ws Writes) Results(results []CommitResult, out []WriteResult) ([]CommitResult, error) {
	if len(out) != len(ws.W) {
		return nil, fmt.Errorf("stead: commit batch: the backend answered %d of %d writes", len(out), len(ws.W))
	}
	for k, w := range ws.W {
		r := &results[ws.pos[k]]
		if out[k].Err != nil {
			r.Err = out[k].Err
			continue
		}
		c, err := w.Committed(out[k].Seqs)
		if err != nil {
			return nil, err
		}
		r.Committed = c
	}
	return results, nil
}

// normalizeExecution returns a shallow copy of e with every time in UTC at microsecond precision
// and an empty context as nil. The maps and slices of e are shared, except those it had to
// rewrite.
func normalizeExecution(e *Execution) (*Execution, error) {
	c := *e
	var err error
	if c.CreatedAt, err = check.Time("created at", e.CreatedAt); err != nil {
		return nil, err
	}
	if c.UpdatedAt, err = check.Time("updated at", e.UpdatedAt); err != nil {
		return nil, err
	}
	if c.FinishedAt, err = check.Time("finished at", e.FinishedAt); err != nil {
		return nil, err
	}
	if len(c.Context) == 0 {
		c.Context = nil
	}
	copied := false // c.Timers is e.Timers until a value must change
	for k, at := range e.Timers {
		n, err := check.RequiredTime("timer "+k, at)
		if err != nil {
			return nil, err
		}
		if n == at {
			continue
		}
		if !copied {
			c.Timers, copied = maps.Clone(e.Timers), true
		}
		c.Timers[k] = n
	}
	copied = false
	for i := range e.Deferred {
		ev, err := normalizeEvent(e.Deferred[i])
		if err != nil {
			return nil, fmt.Errorf("deferred event %d: %w", i, err)
		}
		if ev.CreatedAt == e.Deferred[i].CreatedAt && len(ev.Data) == len(e.Deferred[i].Data) {
			continue
		}
		if !copied {
			c.Deferred, copied = slices.Clone(e.Deferred), true
		}
		c.Deferred[i] = ev
	}
	if len(c.StartContext) == 0 {
		c.StartContext = nil
	}
	if e.DeadLetter != nil {
		if c.DeadLetter, err = normalizeDeadLetter(e.DeadLetter); err != nil {
			return nil, fmt.Errorf("dead letter: %w", err)
		}
	}
	return &c, nil
}

// normalizeDeadLetter returns d, or a copy of it when a time or an empty context had to be
// rewritten.
func normalizeDeadLetter(d *DeadLetter) (*DeadLetter, error) {
	ev, err := normalizeEvent(d.Event)
	if err != nil {
		return nil, err
	}
	n := *d
	changed := ev.CreatedAt != d.Event.CreatedAt || len(ev.Data) != len(d.Event.Data) ||
		(len(d.Context) == 0 && d.Context != nil)
	n.Event = ev
	if len(n.Context) == 0 {
		n.Context = nil
	}
	copied := false // n.Timers is d.Timers until a value must change
	for k, at := range d.Timers {
		u, err := check.RequiredTime("timer "+k, at)
		if err != nil {
			return nil, err
		}
		if u == at {
			continue
		}
		if !copied {
			n.Timers, copied = maps.Clone(d.Timers), true
		}
		n.Timers[k] = u
		changed = true
	}
	if !changed {
		return d, nil
	}
	return &n, nil
}

// normalizeEvent returns ev with its time normalised and empty data as nil.
func normalizeEvent(ev Event) (Event, error) {
	var err error
	if ev.CreatedAt, err = check.Time("event created at", ev.CreatedAt); err != nil {
		return ev, err
	}
	if len(ev.Data) == 0 {
		ev.Data = nil
	}
	return ev, nil
}

// normalizeBundle checks b and returns its normalised copy (see Write.Bundle); b's slices are
// not written to.
func normalizeBundle(b Bundle) (Bundle, error) {
	if err := b.Validate(); err != nil {
		return Bundle{}, err
	}
	out := Bundle{ProcessedEventID: b.ProcessedEventID}
	if len(b.Attributes) > 0 {
		out.Attributes = maps.Clone(b.Attributes) // checked by applyAttributes; a backend may keep it
	}
	if len(b.AlsoProcessed) > 0 {
		out.AlsoProcessed = slices.Clone(b.AlsoProcessed) // a backend may keep it
	}
	if len(b.Emits) > 0 {
		out.Emits = make([]Emit, len(b.Emits))
		for i, e := range b.Emits {
			ev, err := normalizeEvent(e.Event)
			if err != nil {
				return Bundle{}, fmt.Errorf("emit %d: %w", i, err)
			}
			out.Emits[i] = Emit{Target: e.Target, Event: ev}
		}
	}
	if len(b.Spawns) > 0 {
		out.Spawns = make([]Spawn, len(b.Spawns))
		for i, sp := range b.Spawns {
			if len(sp.Context) == 0 {
				sp.Context = nil
			}
			out.Spawns[i] = sp
		}
	}
	if len(b.Timers) > 0 {
		ts, err := netTimers(b.Timers)
		if err != nil {
			return Bundle{}, err
		}
		out.Timers = ts
	}
	if b.Trace != nil {
		st, err := normalizeStep(*b.Trace)
		if err != nil {
			return Bundle{}, err
		}
		out.Trace = &st
	}
	return out, nil
}

// netTimers reduces timer ops to their net effect: ops on one path override each other in order,
// so only the last one per path counts. They keep the order of each path's last op.
func netTimers(ops []TimerOp) ([]TimerOp, error) {
	last := make(map[string]int, len(ops))
	for i, op := range ops {
		last[op.Path] = i
	}
	out := make([]TimerOp, 0, len(last))
	for i, op := range ops {
		if last[op.Path] != i {
			continue
		}
		if op.Action == TimerSchedule {
			var err error
			if op.FireAt, err = check.RequiredTime("timer "+op.Path+" fire time", op.FireAt); err != nil {
				return nil, err
			}
		} else {
			op.FireAt = time.Time{}
		}
		out = append(out, op)
	}
	return out, nil
}

// normalizeStep checks a trace step and returns it without an index, its time normalised and an
// empty context as nil.
func normalizeStep(st TraceStep) (TraceStep, error) {
	if err := st.Validate(); err != nil {
		return st, err
	}
	var err error
	if st.At, err = check.Time("trace at", st.At); err != nil {
		return st, err
	}
	st.Index = 0
	if len(st.Context) == 0 {
		st.Context = nil
	}
	if len(st.Actions) == 0 {
		st.Actions = nil
	}
	return st, nil
}

// normalized checks a timer given to DeleteTimer.
func (t Timer) normalized() (Timer, error) {
	if err := check.ID("execution id", t.ExecutionID); err != nil {
		return t, err
	}
	if err := check.ID("timer path", t.Path); err != nil {
		return t, err
	}
	var err error
	t.FireAt, err = check.RequiredTime("timer fire time", t.FireAt)
	return t, err
}

type claim struct {
	now, until time.Time
	limit      int
}

func prepareClaim(now time.Time, lease time.Duration, limit int) (claim, error) {
	var c claim
	var err error
	if c.now, err = check.RequiredTime("now", now); err != nil {
		return c, err
	}
	if lease <= 0 || lease > MaxLease {
		return c, check.Invalidf("lease %v outside (0, %v]", lease, MaxLease)
	}
	if c.until, err = check.Time("lease end", c.now.Add(lease)); err != nil {
		return c, err
	}
	c.until = c.until.Truncate(time.Microsecond)
	c.limit, err = check.Limit("limit", limit, DefaultListLimit, MaxListLimit)
	return c, err
}

// CheckRefs checks the refs of a LoadForEvents: at most MaxBatch, each a valid EventRef.
func CheckRefs(refs []EventRef) error {
	if len(refs) > MaxBatch {
		return check.Invalidf("%d refs, more than %d", len(refs), MaxBatch)
	}
	for i, r := range refs {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("ref %d: %w", i, err)
		}
	}
	return nil
}

func checkSeqs(seqs []int64) error {
	if len(seqs) > MaxBatch {
		return check.Invalidf("%d sequence numbers, more than %d", len(seqs), MaxBatch)
	}
	for i, s := range seqs {
		if s <= 0 {
			return check.Invalidf("sequence number %d at %d is not positive", s, i)
		}
	}
	return nil
}

// scanArgs checks the optional filter and the limit of PendingOutbox and PendingSpawns.
func scanArgs(field, filter string, limit int) (int, error) {
	if err := check.Text(field, filter); err != nil {
		return 0, err
	}
	return check.Limit("limit", limit, DefaultListLimit, MaxListLimit)
}

// loaded checks what a backend loaded for id and normalises its times.
func loaded(e *Execution, id string) (*Execution, error) {
	if e == nil || e.ID != id {
		return nil, fmt.Errorf("stead: load %q: the backend returned another execution", id)
	}
	e.CreatedAt, e.UpdatedAt, e.FinishedAt = utc(e.CreatedAt), utc(e.UpdatedAt), utc(e.FinishedAt)
	for k, at := range e.Timers {
		e.Timers[k] = utc(at)
	}
	for i := range e.Deferred {
		e.Deferred[i].CreatedAt = utc(e.Deferred[i].CreatedAt)
	}
	if d := e.DeadLetter; d != nil {
		d.Event.CreatedAt = utc(d.Event.CreatedAt)
		for k, at := range d.Timers {
			d.Timers[k] = utc(at)
		}
	}
	return e, nil
}

func (s *Summary) normalize() {
	s.CreatedAt, s.UpdatedAt, s.FinishedAt = utc(s.CreatedAt), utc(s.UpdatedAt), utc(s.FinishedAt)
}

// utc returns t in UTC; the zero time stays the zero time (which is UTC already).
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

func utcTimers(ts []Timer) []Timer {
	for i := range ts {
		ts[i].FireAt = utc(ts[i].FireAt)
	}
	return nonNil(ts)
}

func utcOutbox(es []OutboxEntry) []OutboxEntry {
	for i := range es {
		es[i].Event.CreatedAt = utc(es[i].Event.CreatedAt)
	}
	return nonNil(es)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
