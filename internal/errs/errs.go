// Package errs holds the sentinel errors shared by every stead contract. It is a leaf package so
// that the root vocabulary, the turn contract and the internal plumbing can all wrap the same
// values without an import cycle; users see them re-exported as stead.ErrNotFound and friends.
package errs

//lint:file-ignore ST1012 the package name says what they are (errs.NotFound); the exported names carry Err where users see them (stead.ErrNotFound, turn.ErrNotFound)

import (
	"errors"
	"fmt"
)

var (
	// NotFound: the record does not exist (or belongs to another tenant).
	NotFound = errors.New("stead: not found")
	// Conflict: a compare-and-swap was lost or a uniqueness rule refused the write.
	Conflict = errors.New("stead: conflict")
	// AlreadyExists: a create found the id taken.
	AlreadyExists = errors.New("stead: already exists")
	// Unavailable: the backend could not be reached; nothing was written.
	Unavailable = errors.New("stead: unavailable")
	// Timeout: the outcome is unknown; the write may have landed.
	Timeout = errors.New("stead: timeout")
	// Invalid: the input was refused before anything was written.
	Invalid = errors.New("stead: invalid input")
	// Closed: the store was closed.
	Closed = errors.New("stead: closed")
)

// Classified reports whether err already wraps one of the sentinels: a classifier returns such an
// error as it is, so a layer above never overrides what a layer below decided.
func Classified(err error) bool {
	for _, s := range [...]error{NotFound, Conflict, AlreadyExists, Unavailable, Timeout, Invalid, Closed} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// Wrap returns err marked with sentinel, keeping both in the chain.
func Wrap(sentinel, err error) error { return fmt.Errorf("%w: %w", sentinel, err) }
