package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/steadhq/stead/internal/errs"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Code returns the primary SQLite result code of err (SQLITE_BUSY, SQLITE_CONSTRAINT, ...), or 0
// when err does not come from SQLite. The driver turns on extended codes; the low byte is the
// primary one.
func Code(err error) int {
	var e *sqlite.Error
	if errors.As(err, &e) {
		return e.Code() & 0xff
	}
	return 0
}

// ExtendedCode returns the extended SQLite result code of err, or 0.
func ExtendedCode(err error) int {
	var e *sqlite.Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return 0
}

// IsBusy reports whether err says another connection holds a lock this one needs
// (SQLITE_BUSY or SQLITE_LOCKED, in any of their extended forms). The statement did nothing; the
// transaction is rolled back and may be retried.
func IsBusy(err error) bool {
	c := Code(err)
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}

// Classify maps a database/sql or SQLite error to the stead sentinels, keeping the original in the
// chain:
//
//   - SQLITE_BUSY/LOCKED (after the retries of Retry), a file that cannot be opened, read-only,
//     full or failing with I/O errors: Unavailable;
//   - a UNIQUE or PRIMARY KEY violation: Conflict; other constraint failures, SQLITE_TOOBIG and
//     SQLITE_RANGE: Invalid (bad input that slipped past validation);
//   - a closed database or connection: Closed;
//   - a context deadline: Timeout. A cancelled context is returned as it is.
//
// A nil error stays nil, and an error that already wraps a sentinel is returned unchanged.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	if errs.Classified(err) {
		return err
	}
	switch Code(err) {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY,
		sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_PERM, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_NOLFS,
		sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT: // a damaged file cannot serve; nothing was written
		return errs.Wrap(errs.Unavailable, err)
	case sqlite3.SQLITE_CONSTRAINT:
		switch ExtendedCode(err) {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return errs.Wrap(errs.Conflict, err)
		}
		return errs.Wrap(errs.Invalid, err)
	case sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_RANGE, sqlite3.SQLITE_MISMATCH:
		return errs.Wrap(errs.Invalid, err)
	}
	if errors.Is(err, sql.ErrConnDone) || strings.Contains(err.Error(), "sql: database is closed") {
		return errs.Wrap(errs.Closed, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errs.Wrap(errs.Timeout, err)
	}
	return err
}

// Retry runs fn until it returns something other than a busy error (IsBusy), for at most budget
// in all, backing off between attempts. SQLite's own busy handler already waits inside each
// attempt; Retry covers the lock conflicts SQLite reports without waiting (a WAL recovery or
// checkpoint in another process, a journal-mode switch at open). A busy error that outlasts the
// budget wraps errs.Unavailable: nothing was written. It stops early, with ctx's error, once ctx
// is done.
func Retry(ctx context.Context, budget time.Duration, fn func() error) error {
	deadline := time.Now().Add(budget)
	pause := time.Millisecond
	for {
		err := fn()
		if err == nil || !IsBusy(err) {
			return err
		}
		if !time.Now().Add(pause).Before(deadline) {
			return fmt.Errorf("%w: database locked by another connection for more than %v: %w", errs.Unavailable, budget, err)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: waiting for a lock: %w", errs.Unavailable, ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}
