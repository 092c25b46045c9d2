package pgturn

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/steadhq/stead/internal/errs"
	"github.com/steadhq/stead/internal/pgutil"
)

// classify maps an error of a statement (never of COMMIT: see commitErr) to the contract's
// sentinels, keeping the driver's error in the chain for errors.As:
//
//   - unique, exclusion and foreign-key violations, serialization failures and deadlocks:
//     ErrConflict (a uniqueness rule or a concurrent writer refused the write);
//   - check and not-null violations and data exceptions: ErrInvalid (a value the schema refuses,
//     such as a negative revision from a caller that bypassed validation);
//   - query_canceled (what statement_timeout raises) and the caller's own deadline: ErrTimeout;
//   - a refused or lost connection, an exhausted pool, a server shutting down: ErrUnavailable.
//     Every write runs in a transaction that is committed last, so losing the connection before
//     COMMIT means the server rolled everything back: nothing was written.
//
// The original documents exclusion violations (23P01) as a conflict while its code reports them
// as an unknown code; this follows the documented intent.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23503": // foreign_key_violation: the parent row vanished under a concurrent writer
			return fmt.Errorf("%w: %w", errs.Conflict, err)
		case "23502", "23514": // not_null_violation, check_violation
			return fmt.Errorf("%w: the schema refused a value: %w", errs.Invalid, err)
		}
		return pgutil.Classify(err)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %w", errs.NotFound, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The caller ran out of time. Before COMMIT nothing landed, but the caller cannot tell
		// which statement was cut, so the honest answer is the indeterminate one.
		return fmt.Errorf("%w: %w", errs.Timeout, err)
	}
	c := pgutil.Classify(err)
	if errors.Is(c, errs.Timeout) {
		// pgutil reads a connection lost mid-statement as indeterminate because a statement in
		// autocommit may have landed. Here every write is inside a transaction not yet committed.
		return fmt.Errorf("%w: connection lost before commit: %w", errs.Unavailable, err)
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
