package pgdb_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead/internal/errs"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
)

// TestBehindPgBouncer runs pools through a real PgBouncer in transaction mode: without the
// PgBouncer setting the named statements pgx caches meet each other on PgBouncer's server
// connections, which Classify must turn into a configuration error (ErrInvalid) that names the
// fix, not leave as a raw 42P05 that matches no sentinel; with it every statement works.
func TestBehindPgBouncer(t *testing.T) {
	t.Parallel()
	url := pgdbtest.BouncerURL(t)
	ctx := context.Background()
	// Two client connections of one pool, used in turn: PgBouncer hands both the server
	// connection used last, so the second one prepares a statement the first left there.
	run := func(c pgdb.Config) error {
		pool, err := pgdb.Open(ctx, url, c)
		if err != nil {
			return err
		}
		defer pool.Close()
		a, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer a.Release()
		b, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer b.Release()
		for i := range 20 {
			var n int
			if err := a.QueryRow(ctx, "SELECT $1::int + 1", i).Scan(&n); err != nil {
				return err
			}
			if err := b.QueryRow(ctx, "SELECT $1::int + 1", i).Scan(&n); err != nil {
				return err
			}
		}
		return nil
	}
	err := pgdb.Classify(run(pgdb.Config{MaxConns: 2}))
	if !errors.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "pgdb.Config{PgBouncer: true}") {
		t.Errorf("named statements behind PgBouncer: %v; want ErrInvalid naming pgdb.Config{PgBouncer: true}", err)
	}
	if err := run(pgdb.Config{MaxConns: 2, PgBouncer: true}); err != nil {
		t.Errorf("PgBouncer mode behind PgBouncer: %v", err)
	}
}

// TestStatementTimeoutBehindPgBouncer checks that a statement timeout, which travels as a startup
// parameter PgBouncer refuses, is a configuration error (ErrInvalid, at once) and not "unavailable,
// retry is safe" after every connect attempt.
func TestStatementTimeoutBehindPgBouncer(t *testing.T) {
	t.Parallel()
	url := pgdbtest.BouncerURL(t)
	start := time.Now()
	_, err := pgdb.Open(context.Background(), url, pgdb.Config{StatementTimeout: time.Second})
	if !errors.Is(err, errs.Invalid) || errors.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "ALTER ROLE") {
		t.Errorf("statement timeout through PgBouncer: %v; want ErrInvalid that says to set it on the role", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the refusal took %v: a configuration error must not be retried", took)
	}
}

// TestPgBouncerRefusesStatementTimeout checks that the setting PgBouncer cannot carry is refused
// before any connection is tried.
func TestPgBouncerRefusesStatementTimeout(t *testing.T) {
	t.Parallel()
	err := pgdb.Config{PgBouncer: true, StatementTimeout: time.Second}.Validate()
	if !errors.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "ALTER ROLE") {
		t.Fatalf("Validate: %v, want ErrInvalid that says to set it on the role", err)
	}
}
