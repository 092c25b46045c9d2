package stead

import (
	"context"
	"time"
)

// Store is the execution store contract. Every backend (memstore, sqlitestore, pgstore) satisfies
// it, and storetest.Run proves a backend right through this interface alone. A Store is safe for
// concurrent use by many goroutines; several processes may share one database.
type Store interface {
	Reader
	Writer
	Relay
	// Close releases the store's resources. Calls after Close return ErrClosed.
	Close() error
}

// Reader is the read half of the store. Every read sees every commit that finished before it began
// (on PostgreSQL, each read ends its transaction).
//
// The execution and event ids a read asks about must be non-empty valid identifiers (only the
// source and parent filters of PendingOutbox and PendingSpawns may be empty, meaning all), and
// limits are checked like ListFilter.Limit (0 takes DefaultListLimit; negative or above
// MaxListLimit is ErrInvalid).
type Reader interface {
	// Load returns the execution, or an error wrapping ErrNotFound.
	Load(ctx context.Context, id string) (*Execution, error)
	// LoadForEvent loads the execution and reports whether it already processed eventID, in one
	// round-trip. A missing execution is ErrNotFound.
	LoadForEvent(ctx context.Context, id, eventID string) (exe *Execution, processed bool, err error)
	// LoadForEvents is LoadForEvent for many pairs at once (at most MaxBatch). The result is
	// aligned with refs; a missing execution has a nil Execution.
	LoadForEvents(ctx context.Context, refs []EventRef) ([]Loaded, error)
	// IsProcessed reports whether the execution recorded eventID as processed.
	IsProcessed(ctx context.Context, id, eventID string) (bool, error)
	// List returns one page of summaries, ordered by id byte-wise (as Go compares strings, the
	// same on every backend), filtered by f.
	List(ctx context.Context, f ListFilter) (Page, error)
	// ReadTrace returns the execution's trace steps in index order (empty when there are none,
	// also for an unknown execution).
	ReadTrace(ctx context.Context, id string) ([]TraceStep, error)
	// Timers returns the execution's armed timers ordered by path.
	Timers(ctx context.Context, id string) ([]Timer, error)
	// PendingOutbox returns up to limit undelivered outbox entries emitted by source (every
	// source when empty) in sequence order, claimed or not. It is for inspection; relays claim.
	PendingOutbox(ctx context.Context, source string, limit int) ([]OutboxEntry, error)
	// PendingSpawns is PendingOutbox for spawn intents of one parent (every parent when empty).
	PendingSpawns(ctx context.Context, parentID string, limit int) ([]SpawnEntry, error)
}

// Writer is the write half of the store.
type Writer interface {
	// Commit writes exe and every side effect of its step in one transaction.
	//
	// It is a compare-and-swap on exe.Version: it succeeds only if the stored version equals
	// exe.Version, and stores exe with Version+1. A new execution (Version 0, no row) is inserted;
	// Version 0 against an existing row, or Version > 0 against a missing row (a purged execution),
	// is a conflict. On success exe.Version is the new version and the returned slice holds the
	// outbox sequence number of each emit, in order. On any error nothing is written and
	// exe.Version is left as it was; a lost CAS is a *ConflictError matching ErrConflict, bad input
	// matches ErrInvalid.
	Commit(ctx context.Context, exe *Execution, b Bundle) ([]int64, error)
	// CommitBatch applies many commits in one transaction (at most MaxBatch), each with its own
	// CAS. An item that loses its CAS or is invalid gets its error in its result and writes
	// nothing; the others land with all their side effects. An execution id may appear once per
	// batch: its first item is applied as usual, every later item with the same id fails with
	// ErrInvalid. A non-nil error means the batch as a whole failed: nothing was
	// written (or, with ErrTimeout, the outcome is unknown) and every version is as it was.
	CommitBatch(ctx context.Context, items []CommitItem) ([]CommitResult, error)
	// AppendTrace appends one step to the execution's trace on its own and returns its index.
	AppendTrace(ctx context.Context, id string, step TraceStep) (int64, error)
	// Purge deletes the execution if it is stored at expectedVersion, and with it every row that
	// belongs to it: its dedupe markers, timers, trace, the outbox entries addressed to it and the
	// spawn intents it issued, in one transaction. It returns false and changes nothing if the
	// execution exists at another version. For an id with no execution it sweeps any leftovers
	// and returns false.
	Purge(ctx context.Context, id string, expectedVersion int64) (bool, error)
}

// Relay is the delivery half of the store: outbox entries and spawn intents are claimed with a
// lease and acknowledged once delivered; due timers are read and deleted once fired.
//
// Claims are exclusive: while a lease holds (its end is after now), no other claim returns the
// row; once it expires the row is claimable again. A lease must be positive, and limits are
// checked like ListFilter.Limit. Time is the caller's: now is passed in, so
// every host of a fleet must keep its clock roughly in step (leases of seconds tolerate skew of
// milliseconds).
type Relay interface {
	// ClaimOutbox leases up to limit outbox entries (oldest first) that are not under a live
	// lease, until now+lease.
	ClaimOutbox(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]OutboxEntry, error)
	// AckOutbox deletes delivered entries. Unknown sequence numbers are ignored.
	AckOutbox(ctx context.Context, seqs []int64) error
	// ClaimSpawns is ClaimOutbox for spawn intents.
	ClaimSpawns(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]SpawnEntry, error)
	// AckSpawns deletes handled spawn intents.
	AckSpawns(ctx context.Context, seqs []int64) error
	// DueTimers returns up to limit timers with FireAt <= now, earliest first (ties by execution
	// id, then path).
	DueTimers(ctx context.Context, now time.Time, limit int) ([]Timer, error)
	// DeleteTimer deletes the timer only if it still fires at t.FireAt, so a timer re-armed since
	// it was read survives. It reports whether a row was deleted.
	DeleteTimer(ctx context.Context, t Timer) (bool, error)
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

// CommitResult is the outcome of one CommitItem: the outbox sequence numbers on success, or the
// item's own error (ErrConflict, ErrInvalid).
type CommitResult struct {
	Seqs []int64
	Err  error
}

// ListFilter selects executions for List. Zero values mean "no filter".
type ListFilter struct {
	DefinitionID string
	// Statuses keeps executions whose status is any of these; empty keeps all.
	Statuses []Status
	// RootsOnly keeps executions without a parent.
	RootsOnly bool
	// Limit is the page size: 0 means DefaultListLimit; negative or above MaxListLimit is invalid.
	Limit int
	// Cursor continues from a previous page's NextCursor, with the same filter. A cursor that was
	// not produced by the store for this filter is ErrInvalid.
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
}

// Timer is an armed durable timer. Fire times are kept at microsecond precision; pass a Timer
// read from the store back to DeleteTimer unchanged.
type Timer struct {
	ExecutionID string
	Path        string
	FireAt      time.Time
}

// Save is a state-only commit of exe: Commit with an empty bundle.
func Save(ctx context.Context, w Writer, exe *Execution) error {
	_, err := w.Commit(ctx, exe, Bundle{})
	return err
}
