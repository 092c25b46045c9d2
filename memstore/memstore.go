package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/internal/listing"
)

// DefaultTraceCap is how many trace steps per execution a store keeps unless WithTraceCap says
// otherwise.
const DefaultTraceCap = 200

// Option configures a Store.
type Option func(*Store)

// WithTraceCap keeps at most n trace steps per execution: appending step n+1 evicts the oldest.
// Indexes are unaffected by eviction. n <= 0 disables the cap (the trace grows without bound).
func WithTraceCap(n int) Option {
	return func(s *Store) { s.traceCap = max(n, 0) }
}

// Store is an in-memory stead.Store. The zero value is not usable; call New.
type Store struct {
	traceCap int

	mu        sync.Mutex
	closed    bool
	exes      map[string]*stead.Execution
	processed map[string]map[string]struct{} // execution id -> event ids
	timers    map[timerKey]time.Time
	trace     map[string]*ring
	outbox    queue[stead.OutboxEntry]
	spawns    queue[stead.SpawnEntry]
	lastSeq   int64 // outbox; sequence numbers are never reused
	lastSpawn int64
}

var _ stead.Store = (*Store)(nil)

type timerKey struct{ id, path string }

type ring struct {
	next  int64 // index of the next step: max index + 1, like the SQL backends
	steps []stead.TraceStep
}

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{
		traceCap:  DefaultTraceCap,
		exes:      make(map[string]*stead.Execution),
		processed: make(map[string]map[string]struct{}),
		timers:    make(map[timerKey]time.Time),
		trace:     make(map[string]*ring),
		outbox:    queue[stead.OutboxEntry]{clone: cloneOutbox},
		spawns:    queue[stead.SpawnEntry]{clone: cloneSpawn},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// lock checks ctx and takes the mutex of an open store. The caller unlocks on a nil error.
func (s *Store) lock(ctx context.Context) error {
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

// Close drops everything the store holds. Later calls return ErrClosed; closing again is a no-op.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.exes, s.processed, s.timers, s.trace, s.outbox.rows, s.spawns.rows = nil, nil, nil, nil, nil, nil
	return nil
}

// Load implements stead.Reader.
func (s *Store) Load(ctx context.Context, id string) (*stead.Execution, error) {
	if err := check.ID("execution id", id); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	e, ok := s.exes[id]
	if !ok {
		return nil, fmt.Errorf("memstore: execution %q: %w", id, stead.ErrNotFound)
	}
	return e.Clone(), nil
}

// LoadForEvent implements stead.Reader.
func (s *Store) LoadForEvent(ctx context.Context, id, eventID string) (*stead.Execution, bool, error) {
	if err := (stead.EventRef{ExecutionID: id, EventID: eventID}).Validate(); err != nil {
		return nil, false, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	e, ok := s.exes[id]
	if !ok {
		return nil, false, fmt.Errorf("memstore: execution %q: %w", id, stead.ErrNotFound)
	}
	_, done := s.processed[id][eventID]
	return e.Clone(), done, nil
}

// LoadForEvents implements stead.Reader.
func (s *Store) LoadForEvents(ctx context.Context, refs []stead.EventRef) ([]stead.Loaded, error) {
	if len(refs) > stead.MaxBatch {
		return nil, check.Invalidf("%d refs, more than %d", len(refs), stead.MaxBatch)
	}
	for i, r := range refs {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("ref %d: %w", i, err)
		}
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]stead.Loaded, len(refs))
	for i, r := range refs {
		if e, ok := s.exes[r.ExecutionID]; ok {
			_, done := s.processed[r.ExecutionID][r.EventID]
			out[i] = stead.Loaded{Execution: e.Clone(), Processed: done}
		}
	}
	return out, nil
}

// IsProcessed implements stead.Reader.
func (s *Store) IsProcessed(ctx context.Context, id, eventID string) (bool, error) {
	if err := (stead.EventRef{ExecutionID: id, EventID: eventID}).Validate(); err != nil {
		return false, err
	}
	if err := s.lock(ctx); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	_, done := s.processed[id][eventID]
	return done, nil
}

// List implements stead.Reader. It scans every execution: memstore is for tests, not for millions
// of rows.
func (s *Store) List(ctx context.Context, f stead.ListFilter) (stead.Page, error) {
	q, err := listing.Prepare(f)
	if err != nil {
		return stead.Page{}, err
	}
	if err := s.lock(ctx); err != nil {
		return stead.Page{}, err
	}
	defer s.mu.Unlock()
	var items []stead.Summary
	for id, e := range s.exes {
		if (q.After != "" && id <= q.After) || !matches(q, e) {
			continue
		}
		items = append(items, e.Summarize())
	}
	slices.SortFunc(items, func(a, b stead.Summary) int { return cmp.Compare(a.ID, b.ID) })
	var p stead.Page
	if len(items) > q.Limit {
		items = items[:q.Limit]
		p.NextCursor = q.Next(items[len(items)-1].ID)
	}
	p.Items = items
	return p, nil
}

func matches(q listing.Query, e *stead.Execution) bool {
	if q.DefinitionID != "" && e.DefinitionID != q.DefinitionID {
		return false
	}
	if q.RootsOnly && e.ParentID != "" {
		return false
	}
	return len(q.Statuses) == 0 || slices.Contains(q.Statuses, string(e.Status))
}

// ReadTrace implements stead.Reader.
func (s *Store) ReadTrace(ctx context.Context, id string) ([]stead.TraceStep, error) {
	if err := check.ID("execution id", id); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	r := s.trace[id]
	if r == nil {
		return []stead.TraceStep{}, nil
	}
	out := make([]stead.TraceStep, len(r.steps))
	for i, st := range r.steps {
		out[i] = cloneStep(st)
	}
	return out, nil
}

// Timers implements stead.Reader.
func (s *Store) Timers(ctx context.Context, id string) ([]stead.Timer, error) {
	if err := check.ID("execution id", id); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []stead.Timer{}
	for k, at := range s.timers {
		if k.id == id {
			out = append(out, stead.Timer{ExecutionID: id, Path: k.path, FireAt: at})
		}
	}
	slices.SortFunc(out, func(a, b stead.Timer) int { return cmp.Compare(a.Path, b.Path) })
	return out, nil
}

// PendingOutbox implements stead.Reader.
func (s *Store) PendingOutbox(ctx context.Context, source string, limit int) ([]stead.OutboxEntry, error) {
	limit, err := checkScan("source", source, limit)
	if err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return s.outbox.pending(limit, func(e stead.OutboxEntry) bool { return source == "" || e.Source == source }), nil
}

// PendingSpawns implements stead.Reader.
func (s *Store) PendingSpawns(ctx context.Context, parentID string, limit int) ([]stead.SpawnEntry, error) {
	limit, err := checkScan("parent id", parentID, limit)
	if err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return s.spawns.pending(limit, func(e stead.SpawnEntry) bool { return parentID == "" || e.ParentID == parentID }), nil
}

func checkScan(field, id string, limit int) (int, error) {
	if err := check.Text(field, id); err != nil {
		return 0, err
	}
	return check.Limit("limit", limit, stead.DefaultListLimit, stead.MaxListLimit)
}

// Commit implements stead.Writer.
func (s *Store) Commit(ctx context.Context, exe *stead.Execution, b stead.Bundle) ([]int64, error) {
	if err := validate(exe, &b); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if err := s.cas(exe); err != nil {
		return nil, err
	}
	return s.apply(exe, &b), nil
}

// CommitBatch implements stead.Writer.
func (s *Store) CommitBatch(ctx context.Context, items []stead.CommitItem) ([]stead.CommitResult, error) {
	if len(items) > stead.MaxBatch {
		return nil, check.Invalidf("batch of %d commits, more than %d", len(items), stead.MaxBatch)
	}
	res := make([]stead.CommitResult, len(items))
	seen := make(map[string]bool, len(items))
	for i := range items {
		it := &items[i]
		if res[i].Err = validate(it.Execution, &it.Bundle); res[i].Err != nil {
			continue
		}
		if seen[it.Execution.ID] {
			res[i].Err = check.Invalidf("execution %q appears more than once in the batch", it.Execution.ID)
			continue
		}
		seen[it.Execution.ID] = true
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	for i := range items {
		if res[i].Err != nil {
			continue
		}
		it := &items[i]
		if res[i].Err = s.cas(it.Execution); res[i].Err == nil {
			res[i].Seqs = s.apply(it.Execution, &it.Bundle)
		}
	}
	return res, nil
}

// validate refuses what any backend would refuse, encoding the execution as the SQL backends
// store it so the record size limit is the same everywhere.
func validate(exe *stead.Execution, b *stead.Bundle) error {
	if _, err := stead.EncodeNextVersion(exe); err != nil {
		return err
	}
	return b.Validate()
}

// cas stores a copy of exe at exe.Version+1 if the stored version is exe.Version (or there is no
// row and exe.Version is 0), and bumps exe.Version. Called with the mutex held.
func (s *Store) cas(exe *stead.Execution) error {
	cur, ok := s.exes[exe.ID]
	switch {
	case ok && cur.Version == exe.Version:
	case !ok && exe.Version == 0:
	case ok:
		return &stead.ConflictError{ID: exe.ID, Expected: exe.Version, Found: cur.Version}
	default:
		return &stead.ConflictError{ID: exe.ID, Expected: exe.Version, Found: -1}
	}
	exe.Version++
	s.exes[exe.ID] = exe.Clone()
	return nil
}

// apply writes the side effects of a committed step. Called with the mutex held, after cas.
func (s *Store) apply(exe *stead.Execution, b *stead.Bundle) []int64 {
	seqs := make([]int64, 0, len(b.Emits))
	for _, em := range b.Emits {
		s.lastSeq++
		ev := em.Event
		ev.Data = slices.Clone(ev.Data)
		s.outbox.push(s.lastSeq, stead.OutboxEntry{Seq: s.lastSeq, Source: exe.ID, Target: em.Target, Event: ev})
		seqs = append(seqs, s.lastSeq)
	}
	if b.ProcessedEventID != "" {
		m := s.processed[exe.ID]
		if m == nil {
			m = make(map[string]struct{})
			s.processed[exe.ID] = m
		}
		m[b.ProcessedEventID] = struct{}{}
	}
	for _, sp := range b.Spawns {
		s.lastSpawn++
		s.spawns.push(s.lastSpawn, stead.SpawnEntry{
			Seq: s.lastSpawn, ParentID: exe.ID, ChildID: sp.ChildID, RootPath: sp.RootPath,
			Context: slices.Clone([]byte(sp.Context)),
		})
	}
	for _, op := range b.Timers {
		k := timerKey{exe.ID, op.Path}
		if op.Action == stead.TimerSchedule {
			s.timers[k] = op.FireAt.UTC().Truncate(time.Microsecond)
		} else {
			delete(s.timers, k)
		}
	}
	if b.Trace != nil {
		s.appendTrace(exe.ID, *b.Trace)
	}
	return seqs
}

func (s *Store) appendTrace(id string, st stead.TraceStep) int64 {
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

// AppendTrace implements stead.Writer. The execution must exist.
func (s *Store) AppendTrace(ctx context.Context, id string, step stead.TraceStep) (int64, error) {
	if err := check.ID("execution id", id); err != nil {
		return 0, err
	}
	if err := step.Validate(); err != nil {
		return 0, err
	}
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if _, ok := s.exes[id]; !ok {
		return 0, fmt.Errorf("memstore: execution %q: %w", id, stead.ErrNotFound)
	}
	return s.appendTrace(id, step), nil
}

// Purge implements stead.Writer.
func (s *Store) Purge(ctx context.Context, id string, expectedVersion int64) (bool, error) {
	if err := check.ID("execution id", id); err != nil {
		return false, err
	}
	if err := s.lock(ctx); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	cur, ok := s.exes[id]
	if ok && cur.Version != expectedVersion {
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

// leaseClock drops the monotonic reading and sub-microsecond digits of now, so that lease ends
// compare exactly as they do in the SQL backends.
func leaseClock(now time.Time) time.Time { return now.UTC().Truncate(time.Microsecond) }

func checkClaim(lease time.Duration, limit int) (int, error) {
	if lease <= 0 {
		return 0, check.Invalidf("lease %v is not positive", lease)
	}
	return check.Limit("limit", limit, stead.DefaultListLimit, stead.MaxListLimit)
}

// ClaimOutbox implements stead.Relay.
func (s *Store) ClaimOutbox(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]stead.OutboxEntry, error) {
	limit, err := checkClaim(lease, limit)
	if err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return s.outbox.claim(now, lease, limit), nil
}

// ClaimSpawns implements stead.Relay.
func (s *Store) ClaimSpawns(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]stead.SpawnEntry, error) {
	limit, err := checkClaim(lease, limit)
	if err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return s.spawns.claim(now, lease, limit), nil
}

func checkAcks(seqs []int64) (map[int64]bool, error) {
	if len(seqs) > stead.MaxBatch {
		return nil, check.Invalidf("%d sequence numbers, more than %d", len(seqs), stead.MaxBatch)
	}
	set := make(map[int64]bool, len(seqs))
	for _, q := range seqs {
		set[q] = true
	}
	return set, nil
}

// AckOutbox implements stead.Relay.
func (s *Store) AckOutbox(ctx context.Context, seqs []int64) error {
	acked, err := checkAcks(seqs)
	if err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.outbox.ack(acked)
	return nil
}

// AckSpawns implements stead.Relay.
func (s *Store) AckSpawns(ctx context.Context, seqs []int64) error {
	acked, err := checkAcks(seqs)
	if err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.spawns.ack(acked)
	return nil
}

// DueTimers implements stead.Relay.
func (s *Store) DueTimers(ctx context.Context, now time.Time, limit int) ([]stead.Timer, error) {
	limit, err := check.Limit("limit", limit, stead.DefaultListLimit, stead.MaxListLimit)
	if err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []stead.Timer{}
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

// DeleteTimer implements stead.Relay.
func (s *Store) DeleteTimer(ctx context.Context, t stead.Timer) (bool, error) {
	if err := check.ID("execution id", t.ExecutionID); err != nil {
		return false, err
	}
	if err := check.ID("timer path", t.Path); err != nil {
		return false, err
	}
	if err := s.lock(ctx); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	k := timerKey{t.ExecutionID, t.Path}
	at, ok := s.timers[k]
	if !ok || !at.Equal(t.FireAt.Truncate(time.Microsecond)) {
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
