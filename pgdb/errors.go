package pgdb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/steadhq/stead/internal/errs"
)

// Classify maps a pgx error to the stead sentinels, keeping the original in the chain:
//
//   - connection refused, failed connect, pool exhausted or closed before sending: Unavailable
//     (nothing was written; safe to retry);
//   - statement timeout, cancellation or a connection lost mid-statement (including during COMMIT):
//     Timeout (indeterminate: the write may have landed);
//   - a statement refused by a read-only server (25006, a standby or a demoted primary):
//     Unavailable;
//   - unique, exclusion, serialization and deadlock failures: Conflict;
//   - other integrity and data exceptions: Invalid (bad input that slipped past validation);
//   - a prepared statement that already exists or went missing (42P05, 26000), or a startup
//     parameter the server refused: Invalid, with a message that names the fix. Both are what a
//     pool that is not in PgBouncer mode meets behind PgBouncer in transaction mode, a
//     configuration error that no retry fixes.
//
// A nil error stays nil, and an error that already wraps a sentinel is returned unchanged.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	if errs.Classified(err) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if hint := poolerHint(pgErr); hint != "" {
			return fmt.Errorf("%w: %s: %w", errs.Invalid, hint, err)
		}
		switch {
		case pgErr.Code == "57014": // query_canceled: statement_timeout or cancel request
			return errs.Wrap(errs.Timeout, err)
		case pgErr.Code == "23505" || pgErr.Code == "23P01" || pgErr.Code == "40001" || pgErr.Code == "40P01":
			return errs.Wrap(errs.Conflict, err)
		case strings.HasPrefix(pgErr.Code, "23") || strings.HasPrefix(pgErr.Code, "22"):
			return errs.Wrap(errs.Invalid, err)
		case pgErr.Code == readOnlySQLTransaction:
			// A read-only server: a standby, or a primary demoted in a switchover. Nothing was
			// written; a pool opened by Open has dropped the connection, and its next one goes
			// to the read-write host.
			return errs.Wrap(errs.Unavailable, err)
		case strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "53") ||
			pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03":
			return errs.Wrap(errs.Unavailable, err)
		}
		return err
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return errs.Wrap(errs.Unavailable, err)
	}
	if strings.Contains(err.Error(), "closed pool") {
		return errs.Wrap(errs.Closed, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		if pgconn.SafeToRetry(err) {
			return errs.Wrap(errs.Unavailable, err) // e.g. the pool acquire timed out: nothing sent
		}
		return errs.Wrap(errs.Timeout, err)
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	if pgconn.SafeToRetry(err) {
		return errs.Wrap(errs.Unavailable, err)
	}
	var netErr net.Error
	if errors.As(err, &netErr) || pgconn.Timeout(err) || strings.Contains(err.Error(), "conn closed") ||
		strings.Contains(err.Error(), "unexpected EOF") {
		return errs.Wrap(errs.Timeout, err)
	}
	return err
}

// readOnlySQLTransaction is SQLSTATE 25006, what a standby or a demoted primary answers a write.
const readOnlySQLTransaction = "25006"

// Hints of the configuration errors a pooler in transaction mode causes. They are exported in
// the error text only: callers check errors.Is(err, stead.ErrInvalid).
const (
	hintPgBouncer = "pgdb: a prepared statement is missing or doubled on the server, as behind " +
		"PgBouncer in transaction mode (each transaction may run on another server connection): " +
		"open the pool with pgdb.Config{PgBouncer: true} (stead CLI: --pgbouncer)"
	hintStartupParameter = "pgdb: the server refused a startup parameter, as PgBouncer does " +
		"(pgdb.Config.StatementTimeout is one): set statement_timeout on the database role " +
		"(ALTER ROLE ... SET statement_timeout) instead, or list the parameter in PgBouncer's " +
		"ignore_startup_parameters"
)

// poolerHint returns the fix for an error a pooler in transaction mode causes, or "".
func poolerHint(e *pgconn.PgError) string {
	switch {
	case e.Code == "42P05" || e.Code == "26000": // duplicate_prepared_statement, invalid_sql_statement_name
		return hintPgBouncer
	case e.Code == "08P01" && strings.Contains(e.Message, "unsupported startup parameter"):
		return hintStartupParameter
	}
	return ""
}
