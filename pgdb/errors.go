package pgdb

import (
	"context"
	"errors"
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
//   - unique, exclusion, serialization and deadlock failures: Conflict;
//   - other integrity and data exceptions: Invalid (bad input that slipped past validation);
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
		switch {
		case pgErr.Code == "57014": // query_canceled: statement_timeout or cancel request
			return errs.Wrap(errs.Timeout, err)
		case pgErr.Code == "23505" || pgErr.Code == "23P01" || pgErr.Code == "40001" || pgErr.Code == "40P01":
			return errs.Wrap(errs.Conflict, err)
		case strings.HasPrefix(pgErr.Code, "23") || strings.HasPrefix(pgErr.Code, "22"):
			return errs.Wrap(errs.Invalid, err)
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
