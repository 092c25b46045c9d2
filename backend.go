package stead

import (
	"context"
	"time"
)

// Backend is the storage half of an execution store: what a backend package implements, and what
// a Store calls once it has checked and normalised the arguments. A Backend may assume every
// argument is valid in the sense of the Store method of the same name:
//
//   - ids, event ids and paths are non-empty, valid UTF-8 without NUL, at most MaxIDLen bytes
//     (the source and parent filters of PendingOutbox and PendingSpawns may be empty: all);
//   - times are in UTC at microsecond precision within the years 1 to 9999, and required ones
//     (now, lease ends, fire times) are set;
//   - limits are between 1 and MaxListLimit, batches hold 1 to MaxBatch items, sequence numbers
//     are positive;
//   - a Write is what PrepareWrite returns (see Write).
//
// So a backend only runs storage code. What it must still do is keep the contract's guarantees:
// a commit's compare-and-swap and side effects are one atomic transaction; claims never hand one
// row to two callers while a lease holds; every read sees every commit that finished before it
// began. It returns errors wrapping the sentinels (pgdb.Classify and sqlitedb.Classify map driver
// errors); a lost compare-and-swap is a *ConflictError. The Store never calls a backend after
// Close, and Close waits for the calls in flight before it calls Backend.Close, so a backend
// need not guard against either. storetest.Run checks all of it.
//
// Results need not be normalised: the Store puts times in UTC and turns nil slices into empty
// ones. A backend must not keep or change the slices and values it is given, except the Write's
// Execution and Record, which are its own.
type Backend interface {
	// Load returns the execution, or an error wrapping ErrNotFound.
	Load(ctx context.Context, id string) (*Execution, error)
	// LoadForEvent loads the execution and reports whether it processed ref.EventID, in one
	// round-trip. A missing execution is ErrNotFound.
	LoadForEvent(ctx context.Context, ref EventRef) (*Execution, bool, error)
	// LoadForEvents is LoadForEvent for many refs, in one round-trip; the result is aligned with
	// refs, with a nil Execution where there is none. An execution may appear in several refs.
	LoadForEvents(ctx context.Context, refs []EventRef) ([]Loaded, error)
	// IsProcessed reports whether the execution recorded the event as processed.
	IsProcessed(ctx context.Context, ref EventRef) (bool, error)
	// List returns at most q.Limit summaries matching q with ids byte-wise greater than q.After,
	// in byte-wise id order. It must not read the whole record, and its cost must not grow with
	// how deep in the listing q.After is.
	List(ctx context.Context, q ListQuery) ([]Summary, error)
	// ReadTrace returns the execution's trace steps in index order.
	ReadTrace(ctx context.Context, id string) ([]TraceStep, error)
	// Timers returns the execution's timers ordered by path.
	Timers(ctx context.Context, id string) ([]Timer, error)
	// PendingOutbox returns up to limit outbox entries of source (all when empty) in seq order.
	PendingOutbox(ctx context.Context, source string, limit int) ([]OutboxEntry, error)
	// PendingSpawns returns up to limit spawn intents of parentID (all when empty) in seq order.
	PendingSpawns(ctx context.Context, parentID string, limit int) ([]SpawnEntry, error)

	// Commit applies w atomically: the compare-and-swap of w.Execution against w.Expected, then
	// every side effect of w.Bundle. It returns the outbox seq of each emit in order (nil for
	// none), or a *ConflictError and nothing written.
	Commit(ctx context.Context, w *Write) ([]int64, error)
	// CommitBatch applies every write in one transaction, each with its own compare-and-swap, no
	// two of them for one execution. The result is aligned with ws: Seqs as Commit returns them,
	// or Err (a *ConflictError) for a write that lost and wrote nothing. An error of its own means
	// nothing of the batch was written (or, with ErrTimeout, that the outcome is unknown).
	CommitBatch(ctx context.Context, ws []*Write) ([]WriteResult, error)
	// AppendTrace appends step (its Index is zero, At normalised) and returns the index it got.
	AppendTrace(ctx context.Context, id string, step TraceStep) (int64, error)
	// Purge deletes the execution and every row of it if it is stored at expectedVersion; see
	// Store.Purge.
	Purge(ctx context.Context, id string, expectedVersion int64) (bool, error)

	// ClaimOutbox leases up to limit entries, oldest first, whose lease is unset or ended at or
	// before now, until until.
	ClaimOutbox(ctx context.Context, now, until time.Time, limit int) ([]OutboxEntry, error)
	// AckOutbox deletes the entries; unknown seqs are ignored.
	AckOutbox(ctx context.Context, seqs []int64) error
	// ClaimSpawns is ClaimOutbox for spawn intents.
	ClaimSpawns(ctx context.Context, now, until time.Time, limit int) ([]SpawnEntry, error)
	// AckSpawns deletes the spawn intents; unknown seqs are ignored.
	AckSpawns(ctx context.Context, seqs []int64) error
	// DueTimers returns up to limit timers with FireAt <= now, by (FireAt, execution, path).
	DueTimers(ctx context.Context, now time.Time, limit int) ([]Timer, error)
	// DeleteTimer deletes the timer if it still fires at t.FireAt, and reports whether it did.
	DeleteTimer(ctx context.Context, t Timer) (bool, error)

	// CursorKey returns the secret listing cursors are signed with: at least MinCursorKey random
	// bytes, made once when the store's schema is created and the same for every process on that
	// database, so a cursor from one worker pages on another. The Store asks once and keeps it.
	CursorKey(ctx context.Context) ([]byte, error)

	// Close releases what the backend opened itself (never a pool or database handle the
	// application gave it). The Store calls it once.
	Close() error
}

// Write is one commit as a Backend receives it: checked and normalised by PrepareWrite.
type Write struct {
	// Execution is the execution as it is to be stored: at its new version (Expected+1, and one
	// more for each of Bundle.AlsoProcessed: a version per event applied), every
	// time in UTC at microsecond precision, an empty context as nil. It is a copy the caller's
	// execution does not share at the top level (its maps and slices may be shared: a backend
	// that keeps the value must Clone it, or decode Record).
	Execution *Execution
	// Expected is the version the compare-and-swap must find: 0 means there must be no row (the
	// execution is inserted).
	Expected int64
	// Record is Execution encoded by EncodeExecution, at most MaxRecord bytes: what SQL backends
	// store and DecodeExecution reads back.
	Record []byte
	// Bundle is the step's side effects, checked and normalised: every time in UTC at
	// microsecond precision, empty JSON documents as nil, no trace index, and Timers reduced to
	// their net effect — at most one op per path, in the order of each path's last op, so that
	// applying them in order is the same as applying the caller's ops in order. AlsoProcessed is
	// nil or the store's own copy of the caller's ids, each set and valid, distinct from one
	// another and from ProcessedEventID, which is then set: a commit records all of them or, when
	// it loses its compare-and-swap, none.
	Bundle Bundle
	// ReplaceAttributes says that the backend's index of the execution's attributes must become
	// Execution.Attributes (every key it holds, none other) in this commit's transaction: set
	// when the execution is inserted with attributes, or when Bundle.Attributes changes them.
	// Execution.Attributes already has Bundle.Attributes applied, so a backend reads only it.
	ReplaceAttributes bool
}

// AttributeBackend is implemented by a Backend that indexes attributes (Write.ReplaceAttributes)
// and filters listings and counts by them (ListQuery.Attributes). A Store hands attribute
// conditions only to such a backend and refuses them otherwise: a backend written before
// attributes existed would ignore them and answer as if they matched everything, which is the
// wrong answer to give an operator about to act on what a filter selects.
type AttributeBackend interface {
	Backend
	// FiltersAttributes is a marker; it returns true.
	FiltersAttributes() bool
}

// WriteResult is a Backend's answer for one write of a CommitBatch: the outbox seqs of its emits
// in order (nil for none), or the error it lost with.
type WriteResult struct {
	Seqs []int64
	Err  error
}

// ListQuery is a checked listing request as a Backend receives it. Matches is what its filters
// mean.
type ListQuery struct {
	DefinitionID string
	// Statuses keeps executions with any of these statuses, sorted and distinct; empty keeps all.
	Statuses  []Status
	RootsOnly bool
	// IDPrefix, when set, keeps ids that start with it; IDPrefixEnd is PrefixEnd(IDPrefix), the
	// least string above every such id, or empty when there is none. A SQL backend selects
	// id >= IDPrefix AND id < IDPrefixEnd (no upper bound when it is empty): exact under byte-wise
	// comparison and an index range, where LIKE would need its %, _ and \ escaped and is
	// case-insensitive on SQLite.
	IDPrefix, IDPrefixEnd string
	// Created, Updated and Finished keep executions whose time lies in the window: at or after
	// From, strictly before Before (bounds in UTC at microsecond precision; zero is no bound). An
	// unset time is outside every window that sets a bound (a NULL column fails both comparisons).
	Created, Updated, Finished TimeRange
	// Attributes are the attribute conditions, all of which an execution must satisfy: checked,
	// each with 1 value (MaxAttrIn for AttrIn, sorted and distinct) of one kind, sorted by key.
	// An execution matches a condition only if it carries the key with a value of that kind.
	Attributes []AttrFilter
	// WithAttributes asks for each Summary's Attributes: every attribute the execution carries
	// (nil or empty for none). Without it they must be left nil, and a SQL backend should not
	// touch its attribute table for them. Only an AttributeBackend is asked.
	WithAttributes bool
	// After, when set, keeps only ids byte-wise greater than it.
	After string
	// Limit is how many summaries to return at most (1 to MaxListLimit+1).
	Limit int
}
