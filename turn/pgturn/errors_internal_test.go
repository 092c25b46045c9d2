package pgturn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/steadhq/stead/internal/errs"
	"github.com/steadhq/stead/turn"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	pg := func(code string) error { return &pgconn.PgError{Code: code, Message: "server says"} }
	tests := []struct {
		name string
		err  error
		want error  // sentinel, or nil
		code string // turn.Error code, or ""
	}{
		{"unique violation", pg("23505"), errs.Conflict, ""},
		{"foreign key violation", pg("23503"), errs.Conflict, ""},
		{"exclusion violation (documented intent)", pg("23P01"), errs.Conflict, ""},
		{"serialization failure", pg("40001"), errs.Conflict, ""},
		{"deadlock", pg("40P01"), errs.Conflict, ""},
		{"check violation", pg("23514"), errs.Invalid, turn.CodeInvalidRecord},
		{"not-null violation", pg("23502"), errs.Invalid, turn.CodeInvalidRecord},
		{"data exception", pg("22P02"), errs.Invalid, ""},
		{"statement timeout", pg("57014"), errs.Timeout, ""},
		{"admin shutdown", pg("57P01"), errs.Unavailable, ""},
		{"connection failure", pg("08006"), errs.Unavailable, ""},
		{"too many connections", pg("53300"), errs.Unavailable, ""},
		{"other SQLSTATE", pg("XX000"), nil, CodePostgresPrefix + "XX000"},
		{"no row", pgx.ErrNoRows, errs.NotFound, ""},
		{"caller deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), errs.Timeout, ""},
		{"connection lost mid-statement", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), errs.Unavailable, ""},
		{"other driver failure", errors.New("cannot encode"), nil, CodePostgresDriver},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classify(tt.err)
			if tt.want != nil && !errors.Is(got, tt.want) {
				t.Errorf("classify = %v, want %v", got, tt.want)
			}
			if tt.code != "" && !turn.HasCode(got, tt.code) {
				t.Errorf("classify = %v, want code %s", got, tt.code)
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("classify dropped the driver's error from the chain: %v", got)
			}
		})
	}
	if classify(nil) != nil {
		t.Error("classify(nil) != nil")
	}
	if err := classify(context.Canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("classify(canceled) = %v", err)
	}
}

func TestCommitErr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"serialization failure at commit", &pgconn.PgError{Code: "40001"}, errs.Conflict},
		{"deferred unique violation", &pgconn.PgError{Code: "23505"}, errs.Conflict},
		{"rolled back at commit", pgx.ErrTxCommitRollback, errs.Conflict},
		{"no answer", io.ErrUnexpectedEOF, errs.Timeout},
		{"deadline during commit", context.DeadlineExceeded, errs.Timeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := commitErr(tt.err); !errors.Is(got, tt.want) || !errors.Is(got, tt.err) {
				t.Errorf("commitErr = %v, want %v wrapping the cause", got, tt.want)
			}
		})
	}
}
