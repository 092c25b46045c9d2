package stead

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/steadhq/stead/internal/check"
)

// Store is the execution store: the checked front of a Backend. Every backend package returns
// one (memstore.New, sqlitestore.New, pgstore.New), and stead.NewStore puts one in front of a
// backend written elsewhere. storetest.Run proves a backend right through a Store alone.
//
// A Store validates every argument and normalises every value once, before the backend sees it:
// bad input is refused with an error wrapping ErrInvalid and nothing is written; times are kept
// in UTC at microsecond precision; empty JSON documents are nil; limits resolve to their
// defaults. What it returns is normalised the same way whatever the backend, and it never
// changes the values it is given. After Close every call returns ErrClosed.
//
// A Store is safe for concurrent use by many goroutines; several processes may share one
// database. Every read sees every commit that finished before it began.
type Store struct {
	b Backend
	// mu is held for reading by every call in flight, so that Close, which takes it for writing,
	// waits for them: a backend is never closed under a call and never called after Close.
	mu     sync.RWMutex
	closed bool

	keyMu sync.Mutex
	key   []byte // the backend's cursor key, once read
}

// NewStore returns the checked Store in front of b. It panics if b is nil: that is a programming
// error, not an input to refuse.
func NewStore(b Backend) *Store {
	if b == nil {
		panic("stead: NewStore of a nil Backend")
	}
	return &Store{b: b}
}

// Backend returns the backend behind s, for features only that backend has (running inside the
// application's database transaction). Such features take their arguments through the same
// checks as the Store (PrepareWrite and friends).
func (s *Store) Backend() Backend { return s.b }

// Close waits for the calls in flight to return, then closes the backend. Later calls return an
// error wrapping ErrClosed; closing again is a no-op. It does not close a pool or database handle
// the application passed to the backend.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.b.Close()
}

// enter admits a call: it refuses one on a closed store or with a context that is already done,
// so that no backend has to. A nil error holds s.mu for reading: the caller defers s.leave.
func (s *Store) enter(ctx context.Context, op string) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return fmt.Errorf("stead: %s: %w", op, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		s.mu.RUnlock()
		return fmt.Errorf("stead: %s: %w", op, err)
	}
	return nil
}

func (s *Store) leave() { s.mu.RUnlock() }

// canFilter refuses attribute conditions for a backend that does not filter by them (see
// AttributeBackend).
func (s *Store) canFilter(q ListQuery) error {
	if len(q.Attributes) == 0 {
		return nil
	}
	if ab, ok := s.b.(AttributeBackend); ok && ab.FiltersAttributes() {
		return nil
	}
	return check.Invalidf("this store's backend (%T) does not filter by attributes", s.b)
}

// Load returns the execution, or an error wrapping ErrNotFound.
func (s *Store) Load(ctx context.Context, id string) (*Execution, error) {
	if err := check.ID("execution id", id); err != nil {
		return nil, err
	}
	if err := s.enter(ctx, "load"); err != nil {
		return nil, err
	}
	defer s.leave()
	exe, err := s.b.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	return loaded(exe, id)
}

// LoadForEvent loads the execution and reports whether it already processed eventID, in one
// round-trip. A missing execution is ErrNotFound.
func (s *Store) LoadForEvent(ctx context.Context, id, eventID string) (exe *Execution, processed bool, err error) {
	ref := EventRef{ExecutionID: id, EventID: eventID}
	if err := ref.Validate(); err != nil {
		return nil, false, err
	}
	if err := s.enter(ctx, "load for event"); err != nil {
		return nil, false, err
	}
	defer s.leave()
	exe, processed, err = s.b.LoadForEvent(ctx, ref)
	if err != nil {
		return nil, false, err
	}
	exe, err = loaded(exe, id)
	return exe, processed && err == nil, err
}

// LoadForEvents is LoadForEvent for many pairs at once (at most MaxBatch). The result is aligned
// with refs; a missing execution has a nil Execution.
func (s *Store) LoadForEvents(ctx context.Context, refs []EventRef) ([]Loaded, error) {
	if err := CheckRefs(refs); err != nil {
		return nil, err
	}
	if err := s.enter(ctx, "load for events"); err != nil {
		return nil, err
	}
	defer s.leave()
	if len(refs) == 0 {
		return []Loaded{}, nil
	}
	out, err := s.b.LoadForEvents(ctx, refs)
	if err != nil {
		return nil, err
	}
	if len(out) != len(refs) {
		return nil, fmt.Errorf("stead: load for events: the backend answered %d of %d refs", len(out), len(refs))
	}
	for i := range out {
		if out[i].Execution == nil {
			out[i].Processed = false
			continue
		}
		if out[i].Execution, err = loaded(out[i].Execution, refs[i].ExecutionID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// IsProcessed reports whether the execution recorded eventID as processed.
func (s *Store) IsProcessed(ctx context.Context, id, eventID string) (bool, error) {
	ref := EventRef{ExecutionID: id, EventID: eventID}
	if err := ref.Validate(); err != nil {
		return false, err
	}
	if err := s.enter(ctx, "is processed"); err != nil {
		return false, err
	}
	defer s.leave()
	return s.b.IsProcessed(ctx, ref)
}

// List returns one page of summaries, ordered by id byte-wise (as Go compares strings, the same
// on every backend), filtered by f. Pass the page's NextCursor back, with the same filter, for
// the next page.
func (s *Store) List(ctx context.Context, f ListFilter) (Page, error) {
	q, err := prepareList(f)
	if err != nil {
		return Page{}, err
	}
	if err := s.canFilter(q.query); err != nil {
		return Page{}, err
	}
	if f.WithAttributes {
		if ab, ok := s.b.(AttributeBackend); !ok || !ab.FiltersAttributes() {
			return Page{}, check.Invalidf("this store's backend (%T) does not index attributes to list them", s.b)
		}
		q.query.WithAttributes = true
	}
	if err := s.enter(ctx, "list"); err != nil {
		return Page{}, err
	}
	defer s.leave()
	key, err := s.cursorKey(ctx)
	if err != nil {
		return Page{}, err
	}
	if f.Cursor != "" {
		if q.query.After, err = q.open(key, f.Cursor); err != nil {
			return Page{}, err
		}
	}
	page := q.query
	page.Limit++ // one more than the page tells whether another page follows
	items, err := s.b.List(ctx, page)
	if err != nil {
		return Page{}, err
	}
	p := Page{Items: items}
	if p.Items == nil {
		p.Items = []Summary{}
	}
	if len(p.Items) > q.query.Limit {
		p.Items = p.Items[:q.query.Limit]
		p.NextCursor = q.next(key, p.Items[len(p.Items)-1].ID)
	}
	for i := range p.Items {
		p.Items[i].normalize()
		if !f.WithAttributes || len(p.Items[i].Attributes) == 0 {
			p.Items[i].Attributes = nil
		}
	}
	return p, nil
}

// ReadTrace returns the execution's trace steps in index order (empty when there are none, also
// for an unknown execution).
func (s *Store) ReadTrace(ctx context.Context, id string) ([]TraceStep, error) {
	if err := check.ID("execution id", id); err != nil {
		return nil, err
	}
	if err := s.enter(ctx, "read trace"); err != nil {
		return nil, err
	}
	defer s.leave()
	steps, err := s.b.ReadTrace(ctx, id)
	if err != nil {
		return nil, err
	}
	for i := range steps {
		steps[i].At = utc(steps[i].At)
	}
	return nonNil(steps), nil
}

// Timers returns the execution's armed timers ordered by path.
func (s *Store) Timers(ctx context.Context, id string) ([]Timer, error) {
	if err := check.ID("execution id", id); err != nil {
		return nil, err
	}
	if err := s.enter(ctx, "timers"); err != nil {
		return nil, err
	}
	defer s.leave()
	ts, err := s.b.Timers(ctx, id)
	if err != nil {
		return nil, err
	}
	return utcTimers(ts), nil
}

// PendingOutbox returns up to limit undelivered outbox entries emitted by source (every source
// when empty) in sequence order, claimed or not. It is for inspection; relays claim. A limit of
// 0 takes DefaultListLimit; a negative one or one above MaxListLimit is ErrInvalid.
func (s *Store) PendingOutbox(ctx context.Context, source string, limit int) ([]OutboxEntry, error) {
	limit, err := scanArgs("source", source, limit)
	if err != nil {
		return nil, err
	}
	if err := s.enter(ctx, "pending outbox"); err != nil {
		return nil, err
	}
	defer s.leave()
	es, err := s.b.PendingOutbox(ctx, source, limit)
	if err != nil {
		return nil, err
	}
	return utcOutbox(es), nil
}

// PendingSpawns is PendingOutbox for spawn intents of one parent (every parent when empty).
func (s *Store) PendingSpawns(ctx context.Context, parentID string, limit int) ([]SpawnEntry, error) {
	limit, err := scanArgs("parent id", parentID, limit)
	if err != nil {
		return nil, err
	}
	if err := s.enter(ctx, "pending spawns"); err != nil {
		return nil, err
	}
	defer s.leave()
	es, err := s.b.PendingSpawns(ctx, parentID, limit)
	if err != nil {
		return nil, err
	}
	return nonNil(es), nil
}

// Commit writes exe and every side effect of its step in one transaction: all of it or none of
// it.
//
// It is a compare-and-swap on exe.Version: it succeeds only if the stored version equals
// exe.Version, and stores exe at Version+1. A new execution (Version 0, no row) is inserted;
// Version 0 against an existing row, or Version > 0 against a missing row (a purged execution),
// is a conflict. On success it returns the new version and the outbox sequence number of each
// emit, in order; exe itself is never changed, so the caller sets exe.Version from the result if
// it goes on with the same value. On any error nothing is written; a lost compare-and-swap is a
// *ConflictError matching ErrConflict, bad input matches ErrInvalid.
func (s *Store) Commit(ctx context.Context, exe *Execution, b Bundle) (Committed, error) {
	w, err := PrepareWrite(exe, b)
	if err != nil {
		return Committed{}, err
	}
	if err := s.enter(ctx, "commit"); err != nil {
		return Committed{}, err
	}
	defer s.leave()
	seqs, err := s.b.Commit(ctx, w)
	if err != nil {
		return Committed{}, err
	}
	return w.Committed(seqs)
}

// Save is a state-only commit of exe (Commit with an empty bundle). It returns the new version.
func (s *Store) Save(ctx context.Context, exe *Execution) (int64, error) {
	c, err := s.Commit(ctx, exe, Bundle{})
	return c.Version, err
}

// CommitBatch applies many commits in one transaction (at most MaxBatch), each with its own
// compare-and-swap. An item that loses its compare-and-swap or is invalid gets its error in its
// result and writes nothing; the others land with all their side effects. An execution id may
// appear once per batch: its first item is applied as usual (or refused, if invalid), every later
// item with the same id fails with ErrInvalid. A non-nil error means the batch as a whole failed:
// nothing was written (or, with ErrTimeout, the outcome is unknown). No execution is changed.
func (s *Store) CommitBatch(ctx context.Context, items []CommitItem) ([]CommitResult, error) {
	ws, results, err := PrepareBatch(items)
	if err != nil {
		return nil, err
	}
	if err := s.enter(ctx, "commit batch"); err != nil {
		return nil, err
	}
	defer s.leave()
	if ws.Len() == 0 {
		return results, nil
	}
	out, err := s.b.CommitBatch(ctx, ws.W)
	if err != nil {
		return nil, err
	}
	return ws.Results(results, out)
}

// AppendTrace appends one step to the execution's trace on its own and returns its index. The
// step's Index is assigned by the store; the one given is ignored. The execution must exist
// (ErrNotFound otherwise).
func (s *Store) AppendTrace(ctx context.Context, id string, step TraceStep) (int64, error) {
	if err := check.ID("execution id", id); err != nil {
		return 0, err
	}
	step, err := normalizeStep(step)
	if err != nil {
		return 0, err
	}
	if err := s.enter(ctx, "append trace"); err != nil {
		return 0, err
	}
	defer s.leave()
	return s.b.AppendTrace(ctx, id, step)
}

// Purge deletes the execution if it is stored at expectedVersion, and with it every row that
// belongs to it: its dedupe markers, timers, trace, the outbox entries addressed to it and the
// spawn intents it issued, in one transaction. It returns false and changes nothing if the
// execution exists at another version. For an id with no execution it sweeps any leftovers and
// returns false. A negative expectedVersion is ErrInvalid.
func (s *Store) Purge(ctx context.Context, id string, expectedVersion int64) (bool, error) {
	if err := check.ID("execution id", id); err != nil {
		return false, err
	}
	if expectedVersion < 0 {
		return false, check.Invalidf("purge %q: negative expected version %d", id, expectedVersion)
	}
	if err := s.enter(ctx, "purge"); err != nil {
		return false, err
	}
	defer s.leave()
	return s.b.Purge(ctx, id, expectedVersion)
}

// ClaimOutbox leases up to limit outbox entries (oldest first) that are not under a live lease,
// until now+lease.
//
// Claims are exclusive: while a lease holds (its end is after now), no other claim returns the
// row; once it expires the row is claimable again. now must be set and lease positive and at
// most MaxLease; limits are checked like ListFilter.Limit. Time is the caller's: every host of a
// fleet must keep its clock roughly in step (leases of seconds tolerate skew of milliseconds).
func (s *Store) ClaimOutbox(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]OutboxEntry, error) {
	c, err := prepareClaim(now, lease, limit)
	if err != nil {
		return nil, err
	}
	if err := s.enter(ctx, "claim outbox"); err != nil {
		return nil, err
	}
	defer s.leave()
	es, err := s.b.ClaimOutbox(ctx, c.now, c.until, c.limit)
	if err != nil {
		return nil, err
	}
	return utcOutbox(es), nil
}

// AckOutbox deletes delivered entries (at most MaxBatch). Unknown sequence numbers are ignored;
// one that is not positive is ErrInvalid.
func (s *Store) AckOutbox(ctx context.Context, seqs []int64) error {
	if err := checkSeqs(seqs); err != nil {
		return err
	}
	if err := s.enter(ctx, "ack outbox"); err != nil {
		return err
	}
	defer s.leave()
	if len(seqs) == 0 {
		return nil
	}
	return s.b.AckOutbox(ctx, seqs)
}

// ClaimSpawns is ClaimOutbox for spawn intents.
func (s *Store) ClaimSpawns(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]SpawnEntry, error) {
	c, err := prepareClaim(now, lease, limit)
	if err != nil {
		return nil, err
	}
	if err := s.enter(ctx, "claim spawns"); err != nil {
		return nil, err
	}
	defer s.leave()
	es, err := s.b.ClaimSpawns(ctx, c.now, c.until, c.limit)
	if err != nil {
		return nil, err
	}
	return nonNil(es), nil
}

// AckSpawns deletes handled spawn intents, like AckOutbox.
func (s *Store) AckSpawns(ctx context.Context, seqs []int64) error {
	if err := checkSeqs(seqs); err != nil {
		return err
	}
	if err := s.enter(ctx, "ack spawns"); err != nil {
		return err
	}
	defer s.leave()
	if len(seqs) == 0 {
		return nil
	}
	return s.b.AckSpawns(ctx, seqs)
}

// DueTimers returns up to limit timers with FireAt <= now, earliest first (ties by execution id,
// then path). now must be set.
func (s *Store) DueTimers(ctx context.Context, now time.Time, limit int) ([]Timer, error) {
	now, err := check.RequiredTime("now", now)
	if err != nil {
		return nil, err
	}
	if limit, err = check.Limit("limit", limit, DefaultListLimit, MaxListLimit); err != nil {
		return nil, err
	}
	if err := s.enter(ctx, "due timers"); err != nil {
		return nil, err
	}
	defer s.leave()
	ts, err := s.b.DueTimers(ctx, now, limit)
	if err != nil {
		return nil, err
	}
	return utcTimers(ts), nil
}

// DeleteTimer deletes the timer only if it still fires at t.FireAt, so a timer re-armed since it
// was read survives. It reports whether a row was deleted. Pass a Timer read from the store.
func (s *Store) DeleteTimer(ctx context.Context, t Timer) (bool, error) {
	t, err := t.normalized()
	if err != nil {
		return false, err
	}
	if err := s.enter(ctx, "delete timer"); err != nil {
		return false, err
	}
	defer s.leave()
	return s.b.DeleteTimer(ctx, t)
}

// EventRef names an (execution, event) pair for LoadForEvents.
type EventRef struct {
	ExecutionID string
	EventID     string
}

// Loaded is one result of LoadForEvents.
type Loaded struct {
	Execution *Execution // nil when there is no such execution
	Processed bool
}

// CommitItem is one commit of a CommitBatch.
type CommitItem struct {
	Execution *Execution
	Bundle    Bundle
}

// Committed is what a commit did: the version now stored, and the outbox sequence number of each
// emit of its bundle, in order (nil when it emitted nothing).
type Committed struct {
	Version int64
	Seqs    []int64
}

// CommitResult is the outcome of one CommitItem: what it committed, or its own error
// (ErrConflict, ErrInvalid).
type CommitResult struct {
	Committed
	Err error
}

// ListFilter selects executions for List. Zero values mean "no filter".
type ListFilter struct {
	DefinitionID string
	// Statuses keeps executions whose status is any of these; empty keeps all.
	Statuses []Status
	// RootsOnly keeps executions without a parent.
	RootsOnly bool
	// IDPrefix keeps executions whose id starts with it, byte for byte: no character is a
	// pattern (%, _ and \ match themselves) and case matters, on every backend. The descendants of
	// an execution are the ids with the prefix "<its id>:".
	IDPrefix string
	// Created, Updated and Finished keep executions whose creation, last commit or finish time
	// lies in the window (see TimeRange: [From, Before)). An execution without that time, one not
	// finished for Finished, is outside every window that sets a bound. A window whose From is
	// not before its Before is ErrInvalid.
	Created, Updated, Finished TimeRange
	// Attributes keep executions that satisfy every condition (at most MaxAttributes; see
	// AttrFilter and ParseAttributeFilter). A backend that does not index attributes (one that is
	// not an AttributeBackend) refuses them with ErrInvalid rather than ignore them.
	Attributes []AttrFilter
	// WithAttributes fills each listed Summary's Attributes. It selects nothing, so a cursor
	// pages with or without it; a backend reads its attributes only when asked (PostgreSQL and
	// SQLite join their side table to the page, in the same statement). A backend that does not
	// index attributes refuses it with ErrInvalid. It is not part of a filter's JSON: a stored
	// filter (a bulk job's) selects, it does not display.
	WithAttributes bool `json:"-"`
	// Limit is the page size: 0 means DefaultListLimit; negative or above MaxListLimit is invalid.
	Limit int
	// Cursor continues from a previous page's NextCursor, with the same filter. A cursor that was
	// not produced by this store's database for this filter is ErrInvalid: cursors carry a keyed
	// MAC under a secret the store keeps in its own schema.
	Cursor string
}

// Page is one page of a listing. NextCursor is empty on the last page.
type Page struct {
	Items      []Summary
	NextCursor string
}

// OutboxEntry is an event waiting to be delivered.
type OutboxEntry struct {
	Seq    int64
	Source string // the execution whose step emitted it
	Target string // the execution to deliver to; empty for none
	Event  Event
}

// SpawnEntry is a child execution waiting to be created.
type SpawnEntry struct {
	Seq      int64
	ParentID string
	ChildID  string
	RootPath string
	Context  []byte // a JSON object, or nil
	Trace    string // the Spawn's trace context, "" for none
}

// Timer is an armed durable timer. Fire times are kept at microsecond precision; pass a Timer
// read from the store back to DeleteTimer unchanged.
type Timer struct {
	ExecutionID string
	Path        string
	FireAt      time.Time
}
