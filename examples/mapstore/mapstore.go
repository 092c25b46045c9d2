package mapstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/steadhq/stead"
)

// DefaultTraceCap is how many trace steps an execution keeps when New is given 0.
const DefaultTraceCap = 200

// New returns a store on an empty map backend that keeps the last traceCap trace steps of each
// execution (DefaultTraceCap for 0).
func New(traceCap int) *stead.Store {
	if traceCap <= 0 {
		traceCap = DefaultTraceCap
	}
	b := &Backend{rows: map[string]*row{}, traceCap: traceCap, key: make([]byte, stead.MinCursorKey)}
	_, _ = rand.Read(b.key) // crypto/rand.Read never fails (it panics on a broken system)
	return stead.NewStore(b)
}

// Backend implements stead.Backend over maps. Its zero value is not ready; use New.
type Backend struct {
	traceCap int
	key      []byte // signs listing cursors; a SQL backend would keep it in its schema

	mu      sync.Mutex
	rows    map[string]*row
	outbox  []outboxRow
	spawns  []spawnRow
	nextSeq int64 // shared by the outbox and the spawns: a seq is never reused
}

// A map backend filters by attributes in Go: it is a stead.AttributeBackend.
var _ stead.AttributeBackend = (*Backend)(nil)

// row is one execution and everything that belongs to it.
type row struct {
	exe       *stead.Execution // a private copy; handed out only as clones
	processed map[string]bool
	timers    map[string]time.Time
	trace     []stead.TraceStep
	traceNext int64
}

type outboxRow struct {
	stead.OutboxEntry
	leaseUntil time.Time
}

type spawnRow struct {
	stead.SpawnEntry
	leaseUntil time.Time
}

// The Store never calls a backend after Close and checks every argument first, so the methods
// below only lock, read and write.

func (b *Backend) Close() error { return nil }

func (b *Backend) CursorKey(ctx context.Context) ([]byte, error) { return b.key, nil }

func (b *Backend) Load(ctx context.Context, id string) (*stead.Execution, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.rows[id]
	if !ok {
		return nil, fmt.Errorf("mapstore: %q: %w", id, stead.ErrNotFound)
	}
	return r.exe.Clone(), nil
}

func (b *Backend) LoadForEvent(ctx context.Context, ref stead.EventRef) (*stead.Execution, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.rows[ref.ExecutionID]
	if !ok {
		return nil, false, fmt.Errorf("mapstore: %q: %w", ref.ExecutionID, stead.ErrNotFound)
	}
	return r.exe.Clone(), r.processed[ref.EventID], nil
}

func (b *Backend) LoadForEvents(ctx context.Context, refs []stead.EventRef) ([]stead.Loaded, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]stead.Loaded, len(refs))
	for i, ref := range refs {
		if r, ok := b.rows[ref.ExecutionID]; ok {
			out[i] = stead.Loaded{Execution: r.exe.Clone(), Processed: r.processed[ref.EventID]}
		}
	}
	return out, nil
}

func (b *Backend) IsProcessed(ctx context.Context, ref stead.EventRef) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.rows[ref.ExecutionID]
	return ok && r.processed[ref.EventID], nil
}

// FiltersAttributes implements stead.AttributeBackend: List and Count below filter by
// attributes, so the Store hands them attribute conditions (it refuses them for a backend
// that does not say so, rather than let it ignore them).
func (b *Backend) FiltersAttributes() bool { return true }

// List sorts every id: fine for a map, and the Store turns the rows into pages and cursors.
// ListQuery.Matches is the filter's meaning (definition, statuses, roots, id prefix, time
// windows) and MatchesAttributes its attribute conditions', so a backend that filters in Go
// calls them rather than restating them. A map keeps the whole execution, whose Attributes
// every commit stores with the bundle's changes applied, so it needs no index of its own and
// can ignore Write.ReplaceAttributes, which tells a backend with an index when to rewrite it.
func (b *Backend) List(ctx context.Context, q stead.ListQuery) ([]stead.Summary, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []stead.Summary
	for id, r := range b.rows {
		if id <= q.After && q.After != "" {
			continue
		}
		if s := r.exe.Summarize(); q.Matches(&s) && q.MatchesAttributes(r.exe.Attributes) {
			if q.WithAttributes {
				s.Attributes = maps.Clone(r.exe.Attributes)
			}
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(x, y stead.Summary) int { return strings.Compare(x.ID, y.ID) })
	return out[:min(len(out), q.Limit)], nil
}

func (b *Backend) ReadTrace(ctx context.Context, id string) ([]stead.TraceStep, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.rows[id]
	if !ok {
		return nil, nil
	}
	out := make([]stead.TraceStep, len(r.trace))
	for i, st := range r.trace {
		out[i] = cloneStep(st)
	}
	return out, nil
}

func (b *Backend) Timers(ctx context.Context, id string) ([]stead.Timer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []stead.Timer
	if r, ok := b.rows[id]; ok {
		for path, at := range r.timers {
			out = append(out, stead.Timer{ExecutionID: id, Path: path, FireAt: at})
		}
	}
	slices.SortFunc(out, func(x, y stead.Timer) int { return strings.Compare(x.Path, y.Path) })
	return out, nil
}

func (b *Backend) PendingOutbox(ctx context.Context, source string, limit int) ([]stead.OutboxEntry, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []stead.OutboxEntry
	for _, o := range b.outbox {
		if len(out) < limit && (source == "" || o.Source == source) {
			out = append(out, cloneEntry(o.OutboxEntry))
		}
	}
	return out, nil
}

func (b *Backend) PendingSpawns(ctx context.Context, parentID string, limit int) ([]stead.SpawnEntry, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []stead.SpawnEntry
	for _, s := range b.spawns {
		if len(out) < limit && (parentID == "" || s.ParentID == parentID) {
			out = append(out, cloneSpawn(s.SpawnEntry))
		}
	}
	return out, nil
}

// Commit holds the mutex for the compare-and-swap and every side effect: that is the whole of
// its atomicity.
func (b *Backend) Commit(ctx context.Context, w *stead.Write) ([]int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.cas(w); err != nil {
		return nil, err
	}
	return b.apply(w), nil
}

func (b *Backend) CommitBatch(ctx context.Context, ws []*stead.Write) ([]stead.WriteResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]stead.WriteResult, len(ws))
	for i, w := range ws {
		if out[i].Err = b.cas(w); out[i].Err == nil {
			out[i].Seqs = b.apply(w)
		}
	}
	return out, nil
}

// cas checks the stored version against w.Expected; a missing row is version 0.
func (b *Backend) cas(w *stead.Write) error {
	id := w.Execution.ID
	r, ok := b.rows[id]
	found := int64(-1)
	if ok {
		found = r.exe.Version
	}
	if (ok && found != w.Expected) || (!ok && w.Expected != 0) {
		return &stead.ConflictError{ID: id, Expected: w.Expected, Found: found}
	}
	if !ok {
		r = &row{processed: map[string]bool{}, timers: map[string]time.Time{}}
		b.rows[id] = r
	}
	r.exe = w.Execution.Clone()
	return nil
}

func (b *Backend) apply(w *stead.Write) []int64 {
	id, bundle := w.Execution.ID, w.Bundle
	r := b.rows[id]
	var seqs []int64
	for _, em := range bundle.Emits {
		b.nextSeq++
		b.outbox = append(b.outbox, outboxRow{OutboxEntry: cloneEntry(stead.OutboxEntry{
			Seq: b.nextSeq, Source: id, Target: em.Target, Event: em.Event,
		})})
		seqs = append(seqs, b.nextSeq)
	}
	if bundle.ProcessedEventID != "" {
		r.processed[bundle.ProcessedEventID] = true
		for _, ev := range bundle.AlsoProcessed {
			r.processed[ev] = true
		}
	}
	for _, sp := range bundle.Spawns {
		b.nextSeq++
		b.spawns = append(b.spawns, spawnRow{SpawnEntry: cloneSpawn(stead.SpawnEntry{
			Seq: b.nextSeq, ParentID: id, ChildID: sp.ChildID, RootPath: sp.RootPath, Context: sp.Context,
			Trace: sp.Trace,
		})})
	}
	for _, op := range bundle.Timers { // already one op per path: the Store reduced them
		if op.Action == stead.TimerSchedule {
			r.timers[op.Path] = op.FireAt
		} else {
			delete(r.timers, op.Path)
		}
	}
	if bundle.Trace != nil {
		b.appendTrace(r, *bundle.Trace)
	}
	return seqs
}

func (b *Backend) appendTrace(r *row, st stead.TraceStep) int64 {
	st = cloneStep(st)
	st.Index = r.traceNext
	r.traceNext++
	r.trace = append(r.trace, st)
	if len(r.trace) > b.traceCap {
		r.trace = slices.Delete(r.trace, 0, len(r.trace)-b.traceCap)
	}
	return st.Index
}

func (b *Backend) AppendTrace(ctx context.Context, id string, st stead.TraceStep) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.rows[id]
	if !ok {
		return 0, fmt.Errorf("mapstore: %q: %w", id, stead.ErrNotFound)
	}
	return b.appendTrace(r, st), nil
}

func (b *Backend) Purge(ctx context.Context, id string, expectedVersion int64) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.rows[id]
	if ok && r.exe.Version != expectedVersion {
		return false, nil
	}
	delete(b.rows, id)
	b.outbox = slices.DeleteFunc(b.outbox, func(o outboxRow) bool { return o.Target == id })
	b.spawns = slices.DeleteFunc(b.spawns, func(s spawnRow) bool { return s.ParentID == id })
	return ok, nil
}

func (b *Backend) ClaimOutbox(ctx context.Context, now, until time.Time, limit int) ([]stead.OutboxEntry, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []stead.OutboxEntry
	for i := range b.outbox {
		if o := &b.outbox[i]; len(out) < limit && !o.leaseUntil.After(now) {
			o.leaseUntil = until
			out = append(out, cloneEntry(o.OutboxEntry))
		}
	}
	return out, nil
}

func (b *Backend) ClaimSpawns(ctx context.Context, now, until time.Time, limit int) ([]stead.SpawnEntry, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []stead.SpawnEntry
	for i := range b.spawns {
		if s := &b.spawns[i]; len(out) < limit && !s.leaseUntil.After(now) {
			s.leaseUntil = until
			out = append(out, cloneSpawn(s.SpawnEntry))
		}
	}
	return out, nil
}

func (b *Backend) AckOutbox(ctx context.Context, seqs []int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.outbox = slices.DeleteFunc(b.outbox, func(o outboxRow) bool { return slices.Contains(seqs, o.Seq) })
	return nil
}

func (b *Backend) AckSpawns(ctx context.Context, seqs []int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spawns = slices.DeleteFunc(b.spawns, func(s spawnRow) bool { return slices.Contains(seqs, s.Seq) })
	return nil
}

func (b *Backend) DueTimers(ctx context.Context, now time.Time, limit int) ([]stead.Timer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []stead.Timer
	for id, r := range b.rows {
		for path, at := range r.timers {
			if !at.After(now) {
				out = append(out, stead.Timer{ExecutionID: id, Path: path, FireAt: at})
			}
		}
	}
	slices.SortFunc(out, func(x, y stead.Timer) int {
		return cmp.Or(x.FireAt.Compare(y.FireAt), strings.Compare(x.ExecutionID, y.ExecutionID), strings.Compare(x.Path, y.Path))
	})
	return out[:min(len(out), limit)], nil
}

func (b *Backend) DeleteTimer(ctx context.Context, t stead.Timer) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.rows[t.ExecutionID]
	if !ok || !r.timers[t.Path].Equal(t.FireAt) { // an unarmed path reads as the zero time
		return false, nil
	}
	delete(r.timers, t.Path)
	return true, nil
}

func cloneEntry(e stead.OutboxEntry) stead.OutboxEntry {
	e.Event.Data = slices.Clone(e.Event.Data)
	return e
}

func cloneSpawn(s stead.SpawnEntry) stead.SpawnEntry {
	s.Context = slices.Clone(s.Context)
	return s
}

func cloneStep(st stead.TraceStep) stead.TraceStep {
	st.Actions = slices.Clone(st.Actions)
	st.Context = slices.Clone(st.Context)
	return st
}
