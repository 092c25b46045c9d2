package memstore

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

// DefaultTraceCap is how many trace steps per execution a store keeps unless WithTraceCap says
// otherwise.
const DefaultTraceCap = 200

// Option configures a store.
type Option func(*backend)

// WithTraceCap keeps at most n trace steps per execution: appending step n+1 evicts the oldest.
// Indexes are unaffected by eviction. n <= 0 disables the cap (the trace grows without bound).
func WithTraceCap(n int) Option {
	return func(s *backend) { s.traceCap = max(n, 0) }
}

// backend is the in-memory stead.Backend. Executions are kept as their encoded records, exactly
// what the SQL backends store, and decoded on every load, so that what a test reads back is what
// production would read back.
type backend struct {
	traceCap int
	key      []byte // the cursor key, random per store

	mu        sync.Mutex
	closed    bool
	exes      map[string]*row
	processed map[string]map[string]struct{} // execution id -> event ids
	timers    map[timerKey]time.Time
	trace     map[string]*ring
	outbox    queue[stead.OutboxEntry]
	spawns    queue[stead.SpawnEntry]
	lastSeq   int64 // outbox; sequence numbers are never reused
	lastSpawn int64

	sched schedules // kept apart, under its own lock (schedules.go)
}

var (
	_ stead.Backend          = (*backend)(nil)
	_ stead.Counter          = (*backend)(nil)
	_ stead.AttributeBackend = (*backend)(nil)
)

// row is a stored execution: its record and the columns listing reads, with its indexed
// attributes, which only a commit with Write.ReplaceAttributes changes (as in the SQL backends).
type row struct {
	record  []byte
	summary stead.Summary
	attrs   map[string]stead.AttrValue
}

type timerKey struct{ id, path string }

type ring struct {
	next  int64 // index of the next step: max index + 1, like the SQL backends
	steps []stead.TraceStep
}

// New returns an empty in-memory store.
func New(opts ...Option) *stead.Store {
	s := &backend{
		traceCap:  DefaultTraceCap,
		key:       make([]byte, stead.MinCursorKey),
		exes:      make(map[string]*row),
		processed: make(map[string]map[string]struct{}),
		timers:    make(map[timerKey]time.Time),
		trace:     make(map[string]*ring),
		outbox:    queue[stead.OutboxEntry]{clone: cloneOutbox},
		spawns:    queue[stead.SpawnEntry]{clone: cloneSpawn},
	}
	_, _ = rand.Read(s.key) // crypto/rand.Read never fails (it panics on a broken system)
	for _, o := range opts {
		o(s)
	}
	return stead.NewStore(s)
}

// lock checks ctx and takes the mutex. The caller unlocks on a nil error. The Store refuses calls
// after Close; one that raced Close finds the maps gone and gets ErrClosed here.
func (s *backend) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: %w", err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("memstore: %w", stead.ErrClosed)
	}
	return nil
}

// CursorKey is the store's random key: its cursors open on no other store.
func (s *backend) CursorKey(ctx context.Context) ([]byte, error) { return s.key, nil }

// Close drops everything the store holds.
func (s *backend) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.exes, s.processed, s.timers, s.trace, s.outbox.rows, s.spawns.rows = nil, nil, nil, nil, nil, nil
	return nil
}

// decode reads a stored record back. Called with the mutex held.
func (s *backend) decode(id string) (*stead.Execution, error) {
	r, ok := s.exes[id]
	if !ok {
		return nil, fmt.Errorf("memstore: execution %q: %w", id, stead.ErrNotFound)
	}
	e, err := stead.DecodeExecution(r.record)
	if err != nil {
		return nil, fmt.Errorf("memstore: %w", err)
	}
	return e, nil
}

func (s *backend) Load(ctx context.Context, id string) (*stead.Execution, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return s.decode(id)
}

func (s *backend) LoadForEvent(ctx context.Context, ref stead.EventRef) (*stead.Execution, bool, error) {
	if err := s.lock(ctx); err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	e, err := s.decode(ref.ExecutionID)
	if err != nil {
		return nil, false, err
	}
	_, done := s.processed[ref.ExecutionID][ref.EventID]
	return e, done, nil
}

func (s *backend) LoadForEvents(ctx context.Context, refs []stead.EventRef) ([]stead.Loaded, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]stead.Loaded, len(refs))
	for i, r := range refs {
		if _, ok := s.exes[r.ExecutionID]; !ok {
			continue
		}
		e, err := s.decode(r.ExecutionID)
		if err != nil {
			return nil, err
		}
		_, done := s.processed[r.ExecutionID][r.EventID]
		out[i] = stead.Loaded{Execution: e, Processed: done}
	}
	return out, nil
}

func (s *backend) IsProcessed(ctx context.Context, ref stead.EventRef) (bool, error) {
	if err := s.lock(ctx); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	_, done := s.processed[ref.ExecutionID][ref.EventID]
	return done, nil
}

// FiltersAttributes implements stead.AttributeBackend.
func (s *backend) FiltersAttributes() bool { return true }

// List scans every execution: memstore is for tests, not for millions of rows.
func (s *backend) List(ctx context.Context, q stead.ListQuery) ([]stead.Summary, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var items []stead.Summary
	for id, r := range s.exes {
		if (q.After != "" && id <= q.After) || !q.Matches(&r.summary) || !q.MatchesAttributes(r.attrs) {
			continue
		}
		sm := r.summary
		if q.WithAttributes {
			sm.Attributes = maps.Clone(r.attrs) // the caller owns what it is given
		}
		items = append(items, sm)
	}
	slices.SortFunc(items, func(a, b stead.Summary) int { return strings.Compare(a.ID, b.ID) })
	if len(items) > q.Limit {
		items = items[:q.Limit]
	}
	return items, nil
}

// Count implements stead.Counter: one pass over the executions, without sorting them.
func (s *backend) Count(ctx context.Context, q stead.ListQuery) ([]stead.CountRow, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	type group struct {
		def    string
		status stead.Status
	}
	n := map[group]int64{}
	for _, r := range s.exes {
		if q.Matches(&r.summary) && q.MatchesAttributes(r.attrs) {
			n[group{r.summary.DefinitionID, r.summary.Status}]++
		}
	}
	out := make([]stead.CountRow, 0, len(n))
	for g, c := range n {
		out = append(out, stead.CountRow{DefinitionID: g.def, Status: g.status, N: c})
	}
	return out, nil
}

func (s *backend) ReadTrace(ctx context.Context, id string) ([]stead.TraceStep, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	r := s.trace[id]
	if r == nil {
		return nil, nil
	}
	out := make([]stead.TraceStep, len(r.steps))
	for i, st := range r.steps {
		out[i] = cloneStep(st)
	}
	return out, nil
}

func (s *backend) Timers(ctx context.Context, id string) ([]stead.Timer, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []stead.Timer
	for k, at := range s.timers {
		if k.id == id {
			out = append(out, stead.Timer{ExecutionID: id, Path: k.path, FireAt: at})
		}
	}
	slices.SortFunc(out, func(a, b stead.Timer) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

func (s *backend) PendingOutbox(ctx context.Context, source string, limit int) ([]stead.OutboxEntry, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return s.outbox.pending(limit, func(e stead.OutboxEntry) bool { return source == "" || e.Source == source }), nil
}

func (s *backend) PendingSpawns(ctx context.Context, parentID string, limit int) ([]stead.SpawnEntry, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return s.spawns.pending(limit, func(e stead.SpawnEntry) bool { return parentID == "" || e.ParentID == parentID }), nil
}

func (s *backend) Commit(ctx context.Context, w *stead.Write) ([]int64, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if err := s.cas(w); err != nil {
		return nil, err
	}
	return s.apply(w), nil
}

func (s *backend) CommitBatch(ctx context.Context, ws []*stead.Write) ([]stead.WriteResult, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	res := make([]stead.WriteResult, len(ws))
	for i, w := range ws {
		if res[i].Err = s.cas(w); res[i].Err == nil {
			res[i].Seqs = s.apply(w)
		}
	}
	return res, nil
}

// cas stores w's record if the stored version is w.Expected (or there is no row and w.Expected
// is 0). Called with the mutex held.
func (s *backend) cas(w *stead.Write) error {
	id := w.Execution.ID
	cur, ok := s.exes[id]
	switch {
	case ok && cur.summary.Version == w.Expected:
	case !ok && w.Expected == 0:
	case ok:
		return &stead.ConflictError{ID: id, Expected: w.Expected, Found: cur.summary.Version}
	default:
		return &stead.ConflictError{ID: id, Expected: w.Expected, Found: -1}
	}
	// A test backend can afford the check no SQL backend makes without a read: an execution whose
	// attributes changed by another way than Bundle.Attributes would leave a SQL backend's index
	// behind its record, so it is refused here, where tests (and steadtest) run, before it ships.
	if ok && !w.ReplaceAttributes && !maps.Equal(cur.attrs, w.Execution.Attributes) {
		return fmt.Errorf("memstore: execution %q: its attributes were changed on the execution, not through "+
			"Bundle.Attributes, so a SQL backend would not index the change: %w", id, stead.ErrInvalid)
	}
	next := &row{record: w.Record, summary: w.Execution.Summarize()}
	switch {
	case w.ReplaceAttributes:
		next.attrs = maps.Clone(w.Execution.Attributes)
	case ok:
		next.attrs = cur.attrs
	}
	s.exes[id] = next
	return nil
}

// apply writes the side effects of a committed step. Called with the mutex held, after cas.
func (s *backend) apply(w *stead.Write) []int64 {
	id, b := w.Execution.ID, &w.Bundle
	var seqs []int64
	for _, em := range b.Emits {
		s.lastSeq++
		ev := em.Event
		ev.Data = slices.Clone(ev.Data)
		s.outbox.push(s.lastSeq, stead.OutboxEntry{Seq: s.lastSeq, Source: id, Target: em.Target, Event: ev})
		seqs = append(seqs, s.lastSeq)
	}
	if b.ProcessedEventID != "" {
		m := s.processed[id]
		if m == nil {
			m = make(map[string]struct{})
			s.processed[id] = m
		}
		m[b.ProcessedEventID] = struct{}{}
		for _, ev := range b.AlsoProcessed {
			m[ev] = struct{}{}
		}
	}
	for _, sp := range b.Spawns {
		s.lastSpawn++
		s.spawns.push(s.lastSpawn, stead.SpawnEntry{
			Seq: s.lastSpawn, ParentID: id, ChildID: sp.ChildID, RootPath: sp.RootPath,
			Context: slices.Clone([]byte(sp.Context)), Trace: sp.Trace,
		})
	}
	for _, op := range b.Timers {
		k := timerKey{id, op.Path}
		if op.Action == stead.TimerSchedule {
			s.timers[k] = op.FireAt
		} else {
			delete(s.timers, k)
		}
	}
	if b.Trace != nil {
		s.appendTrace(id, *b.Trace)
	}
	return seqs
}

func (s *backend) appendTrace(id string, st stead.TraceStep) int64 {
	r := s.trace[id]
	if r == nil {
		r = &ring{}
		s.trace[id] = r
	}
	st = cloneStep(st)
	st.Index = r.next
	r.next++
	r.steps = append(r.steps, st)
	if s.traceCap > 0 && len(r.steps) > s.traceCap {
		// Reslicing keeps the append amortised; evicted steps stay reachable only until the next
		// append outgrows the backing array and copies the live ones, so memory stays within
		// about twice the cap.
		r.steps = r.steps[len(r.steps)-s.traceCap:]
	}
	return st.Index
}

func (s *backend) AppendTrace(ctx context.Context, id string, step stead.TraceStep) (int64, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if _, ok := s.exes[id]; !ok {
		return 0, fmt.Errorf("memstore: execution %q: %w", id, stead.ErrNotFound)
	}
	return s.appendTrace(id, step), nil
}

func (s *backend) Purge(ctx context.Context, id string, expectedVersion int64) (bool, error) {
	if err := s.lock(ctx); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	cur, ok := s.exes[id]
	if ok && cur.summary.Version != expectedVersion {
		return false, nil
	}
	delete(s.exes, id)
	delete(s.processed, id)
	delete(s.trace, id)
	for k := range s.timers {
		if k.id == id {
			delete(s.timers, k)
		}
	}
	s.outbox.drop(func(e stead.OutboxEntry) bool { return e.Target == id })
	s.spawns.drop(func(e stead.SpawnEntry) bool { return e.ParentID == id })
	return ok, nil
}

func (s *backend) ClaimOutbox(ctx context.Context, now, until time.Time, limit int) ([]stead.OutboxEntry, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return s.outbox.claim(now, until, limit), nil
}

func (s *backend) ClaimSpawns(ctx context.Context, now, until time.Time, limit int) ([]stead.SpawnEntry, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return s.spawns.claim(now, until, limit), nil
}

func (s *backend) AckOutbox(ctx context.Context, seqs []int64) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.outbox.ack(seqs)
	return nil
}

func (s *backend) AckSpawns(ctx context.Context, seqs []int64) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.spawns.ack(seqs)
	return nil
}

func (s *backend) DueTimers(ctx context.Context, now time.Time, limit int) ([]stead.Timer, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []stead.Timer
	for k, at := range s.timers {
		if !at.After(now) {
			out = append(out, stead.Timer{ExecutionID: k.id, Path: k.path, FireAt: at})
		}
	}
	slices.SortFunc(out, func(a, b stead.Timer) int {
		return cmp.Or(a.FireAt.Compare(b.FireAt), cmp.Compare(a.ExecutionID, b.ExecutionID), cmp.Compare(a.Path, b.Path))
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (s *backend) DeleteTimer(ctx context.Context, t stead.Timer) (bool, error) {
	if err := s.lock(ctx); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	k := timerKey{t.ExecutionID, t.Path}
	at, ok := s.timers[k]
	if !ok || !at.Equal(t.FireAt) {
		return false, nil
	}
	delete(s.timers, k)
	return true, nil
}

func cloneOutbox(e stead.OutboxEntry) stead.OutboxEntry {
	e.Event.Data = slices.Clone(e.Event.Data)
	return e
}

func cloneSpawn(e stead.SpawnEntry) stead.SpawnEntry {
	e.Context = slices.Clone(e.Context)
	return e
}

func cloneStep(st stead.TraceStep) stead.TraceStep {
	st.Actions = slices.Clone(st.Actions)
	st.Context = slices.Clone(st.Context)
	return st
}
