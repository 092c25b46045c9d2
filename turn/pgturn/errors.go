package pgturn

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/steadhq/stead/internal/errs"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/dbconflict"
)

// Stable codes of failures the contract has no sentinel for. They are carried by a *turn.Error
// (check with turn.HasCode), the driver's error beside it in the chain.
const (
	// CodePostgresPrefix followed by a SQLSTATE: a database error of no other kind.
	CodePostgresPrefix = "stead.turn.postgres."
	// CodePostgresDriver: a driver failure of no other kind.
	CodePostgresDriver = "stead.turn.postgres.driver"
)

// classify maps an error of a statement (never of COMMIT: see commitErr) to the contract's
// sentinels, keeping the driver's error in the chain for errors.As:
//
//   - unique, exclusion and foreign-key violations, serialization failures and deadlocks:
//     ErrConflict (a uniqueness rule or a concurrent writer refused the write), worded by the
//     rule in the contract's terms, never with the server's message (kept in the chain);
//   - check and not-null violations: turn.CodeInvalidRecord; data exceptions: ErrInvalid (a value
//     the schema refuses that validation let through);
//   - query_canceled (what statement_timeout raises) and the caller's deadline: ErrTimeout;
//   - a refused or lost connection, an exhausted pool, a server shutting down: ErrUnavailable.
//     Every write runs in a transaction that is committed last, so losing the connection before
//     COMMIT means the server rolled everything back: nothing was written;
//   - any other SQLSTATE: CodePostgresPrefix+SQLSTATE; any other driver failure:
//     CodePostgresDriver.
//
// An exclusion violation (23P01) is a conflict like a unique violation: both are a rule over
// several rows refusing the write, and the caller's move is the same (reload, retry or drop).
func classify(err error) error {
	if err == nil || classified(err) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23503": // foreign_key_violation: the parent row vanished under a concurrent writer
			return dbconflict.Vanished(err)
		case "23505", "23P01": // unique_violation, exclusion_violation: worded by the rule
			return dbconflict.Unique(pgErr.TableName, pgErr.ConstraintName, err)
		case "40001", "40P01": // serialization_failure, deadlock_detected
			return dbconflict.Concurrent(err)
		case "23502", "23514": // not_null_violation, check_violation
			return fmt.Errorf("%w: %w", turn.InvalidRecord("the schema refused a value"), err)
		}
		if c := pgdb.Classify(err); c != err {
			return c
		}
		// Any other SQLSTATE is reported under a stable code naming it.
		return fmt.Errorf("%w: %w", turn.NewError(CodePostgresPrefix+pgErr.Code, nil, ""), err)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %w", errs.NotFound, err)
	}
	if errors.Is(err, context.Canceled) {
		return err // the caller gave up; it needs no sentinel to know
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// The caller's deadline cut the call short: "no answer in time", the context's error in
		// the chain. Before COMMIT nothing landed; a deadline hitting COMMIT itself goes through
		// commitErr, where it is genuinely indeterminate.
		return fmt.Errorf("%w: %w", errs.Timeout, err)
	}
	c := pgdb.Classify(err)
	switch {
	case errors.Is(c, errs.Timeout):
		// pgdb.Classify reads a connection lost mid-statement as indeterminate, because a
		// statement in autocommit may have landed. Here every write is inside a transaction not
		// yet committed, so the server rolled it back.
		return fmt.Errorf("%w: connection lost before commit: %w", errs.Unavailable, err)
	case c == err:
		return fmt.Errorf("%w: %w", turn.NewError(CodePostgresDriver, nil, ""), err)
	}
	return c
}

// commitErr maps a failure of COMMIT itself. A database error (a deferred constraint, a
// serialization failure) is a definite refusal and maps like any statement; anything else means
// the COMMIT was sent and no answer came back, so the transaction may or may not have committed:
// ErrTimeout, which the contract reads as "re-read, do not blindly retry".
func commitErr(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return classify(err)
	}
	if errors.Is(err, pgx.ErrTxCommitRollback) {
		return fmt.Errorf("%w: the transaction was rolled back at commit: %w", errs.Conflict, err)
	}
	return fmt.Errorf("%w: commit outcome unknown: %w", errs.Timeout, err)
}

// classified reports whether err already carries the contract's answer (a sentinel or a code), so
// that classifying twice changes nothing.
func classified(err error) bool {
	var coded *turn.Error
	if errors.As(err, &coded) {
		return true
	}
	for _, s := range []error{errs.NotFound, errs.Conflict, errs.Unavailable, errs.Timeout, errs.Invalid,
		turn.ErrClosed, turn.ErrCorrupt} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
