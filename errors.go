package stead

import (
	"fmt"

	"github.com/steadhq/stead/internal/errs"
)

// Sentinel errors. Every error a store returns wraps at most one of them; check with errors.Is.
var (
	// ErrNotFound: the execution (or row) does not exist.
	ErrNotFound = errs.NotFound
	// ErrConflict: a rule refused the write and nothing was written. A lost version
	// compare-and-swap is a *ConflictError; a uniqueness rule, or a serialization failure or
	// deadlock the database resolved by aborting the transaction, match ErrConflict too. Reload
	// and retry, or drop the work.
	ErrConflict = errs.Conflict
	// ErrAlreadyExists: a create found the id taken.
	ErrAlreadyExists = errs.AlreadyExists
	// ErrUnavailable: the backend could not be reached (connection refused, pool exhausted).
	// Nothing was written; retrying is safe.
	ErrUnavailable = errs.Unavailable
	// ErrTimeout: the call timed out or the connection was lost while committing. The write
	// may or may not have landed: re-read before retrying.
	ErrTimeout = errs.Timeout
	// ErrInvalid: the input was refused before anything was written.
	ErrInvalid = errs.Invalid
	// ErrClosed: the store was closed.
	ErrClosed = errs.Closed
)

// ConflictError describes a lost compare-and-swap. It matches ErrConflict with errors.Is.
type ConflictError struct {
	ID       string
	Expected int64 // the version the caller loaded
	Found    int64 // the stored version, or -1 when unknown or when there is no row
}

func (e *ConflictError) Error() string {
	if e.Found < 0 {
		return fmt.Sprintf("stead: stale write to %q: expected version %d", e.ID, e.Expected)
	}
	return fmt.Sprintf("stead: stale write to %q: expected version %d, found %d", e.ID, e.Expected, e.Found)
}

// Is reports whether target is ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// StatusError is an operation refused because of the status an execution is in: a control
// command its status does not take (resuming a running execution, suspending a finished one), or
// a purge of a tree with a member that has not ended. Nothing was written. It matches ErrInvalid:
// the request, not the store, is at fault, and the caller's move is to change the request.
type StatusError struct {
	ID     string // the execution
	Op     string // what was refused: "suspend", "purge", …
	Status Status // the status that refused it
	// Reason, when set, says why that status refuses it ("it has not started").
	Reason string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("stead: %s %q: execution is %s", e.Op, e.ID, e.Status)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Is reports whether target is ErrInvalid.
func (e *StatusError) Is(target error) bool { return target == ErrInvalid }
