// Package stead is the vocabulary and the execution-store contract of stead, durable state for Go
// programs that advance in steps.
//
// An Execution is one run of a statechart. Each step of it loads the execution (LoadForEvent
// says in the same round-trip whether the event was already applied), computes the next state
// and a Bundle of side effects (events to emit, a processed-event marker, child executions to
// spawn, timers to arm or disarm, a trace step), and commits both with Store.Commit: one
// transaction, guarded by a compare-and-swap on Execution.Version. The loser of a race gets an
// error matching ErrConflict and its in-memory execution is left as it was.
//
// After commit, relays deliver what the step produced: ClaimOutbox and ClaimSpawns lease rows so
// that relays on many hosts never hand out the same row at once, AckOutbox and AckSpawns remove
// them once delivered, DueTimers and DeleteTimer fire durable timers.
//
// Backends: memstore (in memory, for tests), sqlitestore (one host, no server) and pgstore
// (PostgreSQL, many worker hosts). storetest.Run is the conformance suite every one of them passes.
//
// Errors wrap one of the sentinels (ErrNotFound, ErrConflict, ErrAlreadyExists, ErrUnavailable,
// ErrTimeout, ErrInvalid, ErrClosed); check them with errors.Is. Bad input (empty ids, NUL bytes,
// invalid UTF-8, oversized payloads, negative limits, forged cursors) is refused with ErrInvalid
// before anything is written.
package stead
