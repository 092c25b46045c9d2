package turn

import (
	"errors"
	"fmt"

	"github.com/steadhq/stead/internal/errs"
)

// The sentinels every turn store error matches (check with errors.Is). They are the same values
// as stead.ErrNotFound and friends, so one errors.Is works across the whole project.
var (
	// ErrNotFound: the record does not exist for this account. Another tenant's id gives exactly
	// this answer too: a store never reveals that a foreign record exists.
	ErrNotFound = errs.NotFound
	// ErrConflict: a uniqueness rule or a compare-and-swap precondition refused the write
	// (duplicate id, a second open blocking card, an illegal status transition, an outbox key
	// already enqueued, a lost race). Nothing was written.
	ErrConflict = errs.Conflict
	// ErrUnavailable: the backend could not be reached. Nothing was written; retrying is safe.
	ErrUnavailable = errs.Unavailable
	// ErrTimeout: no answer in time. The write may have landed: re-read and resume by idempotency
	// key rather than retrying blindly.
	ErrTimeout = errs.Timeout
	// ErrInvalid: the input was refused before anything was written (bad identifiers, text or
	// JSON, a structurally invalid record, a bundle item of another account).
	ErrInvalid = errs.Invalid
	// ErrClosed: the store was closed.
	ErrClosed = errs.Closed
	// ErrCorrupt: stored data breaks an invariant the backend relies on (an unknown enum label,
	// a negative counter, half a redaction record). It is never the caller's fault.
	ErrCorrupt = errors.New("stead: turn: stored data is corrupt")
)

// Stable codes carried by *Error. They never change meaning once published.
const (
	// CodeIdentityMismatch: a record disagrees with the record it addresses, for example an
	// assistant turn whose conversation differs from the stored user turn's. Matches ErrInvalid.
	CodeIdentityMismatch = "stead.turn.identity_mismatch"
	// CodeInvalidRecord: a structural precondition failed: an interaction inserted in a status
	// other than active, an outbox entry enqueued in a status other than pending, an empty event
	// batch, a number out of range for its column, a database CHECK or NOT NULL refusal.
	// Matches ErrInvalid.
	CodeInvalidRecord = "stead.turn.invalid_record"
	// CodeBundleAccountMismatch: a commit bundle carries an item of another account. Matches
	// ErrInvalid.
	CodeBundleAccountMismatch = "stead.turn.bundle_account_mismatch"
)

// Error is a refusal with a stable code. Kind is the sentinel it matches with errors.Is (nil
// when it matches none); Detail names identifiers only, never payloads or server messages.
type Error struct {
	Code   string
	Detail string
	Kind   error
}

// NewError returns an *Error with the given code, sentinel and detail.
func NewError(code string, kind error, format string, args ...any) *Error {
	return &Error{Code: code, Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return "stead: turn: " + e.Code
	}
	return "stead: turn: " + e.Code + ": " + e.Detail
}

// Unwrap returns the sentinel, so errors.Is(err, ErrInvalid) holds for the codes above.
func (e *Error) Unwrap() error { return e.Kind }

// HasCode reports whether err is, or wraps, an *Error with exactly this code.
func HasCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// InvalidRecord returns the CodeInvalidRecord refusal.
func InvalidRecord(format string, args ...any) error {
	return NewError(CodeInvalidRecord, ErrInvalid, format, args...)
}

// IdentityMismatch returns the CodeIdentityMismatch refusal.
func IdentityMismatch(format string, args ...any) error {
	return NewError(CodeIdentityMismatch, ErrInvalid, format, args...)
}

// BundleAccountMismatch returns the CodeBundleAccountMismatch refusal.
func BundleAccountMismatch(format string, args ...any) error {
	return NewError(CodeBundleAccountMismatch, ErrInvalid, format, args...)
}

// MissingStoreError is returned by Stores.Check when a role has no implementation.
type MissingStoreError struct{ Role string }

func (e *MissingStoreError) Error() string { return "stead: turn: no store for role " + e.Role }

// Is makes a missing role match ErrInvalid: the Stores value itself is bad input.
func (e *MissingStoreError) Is(target error) bool { return target == ErrInvalid }
