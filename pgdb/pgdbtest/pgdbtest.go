// Package pgdbtest gives every PostgreSQL test its own fresh schema on a real server: the tests of
// stead, and those of a backend written outside this module that runs the conformance suites on
// PostgreSQL.
//
// The server comes from STEAD_TEST_DATABASE_URL (default DefaultURL). When it cannot be reached
// the test is skipped, unless STEAD_REQUIRE_POSTGRES=1 (set by .ci/run), in which case the test
// fails: in CI a PostgreSQL test never passes by not running.
//
// Tests that run through PgBouncer in transaction mode find it at STEAD_TEST_PGBOUNCER_URL (a
// PgBouncer in front of the same server, started by test.sh); they skip without it, unless
// STEAD_REQUIRE_PGBOUNCER=1 (also set by .ci/run), in which case they fail.
package pgdbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultURL is the local server every developer machine and CI runner has.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// URL returns the test server's URL.
func URL() string {
	if u := os.Getenv("STEAD_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Required reports whether an unreachable server must fail tests instead of skipping them.
func Required() bool { return os.Getenv("STEAD_REQUIRE_POSTGRES") == "1" }

// BouncerRequired reports whether a missing or unreachable PgBouncer must fail tests instead of
// skipping them.
func BouncerRequired() bool { return os.Getenv("STEAD_REQUIRE_PGBOUNCER") == "1" }

// BouncerURL returns the URL of the PgBouncer in front of the test server, after checking that it
// answers. Without STEAD_TEST_PGBOUNCER_URL, or when it does not answer, the test is skipped, or
// fails when BouncerRequired.
func BouncerURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("STEAD_TEST_PGBOUNCER_URL")
	fail := t.Skipf
	if BouncerRequired() {
		fail = t.Fatalf
	}
	if u == "" {
		fail("STEAD_TEST_PGBOUNCER_URL is not set (test.sh starts a PgBouncer and sets it)")
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		t.Fatalf("STEAD_TEST_PGBOUNCER_URL: %v", err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec // what works through transaction pooling
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		err = conn.Ping(ctx)
		_ = conn.Close(ctx)
	}
	if err != nil {
		fail("PgBouncer at STEAD_TEST_PGBOUNCER_URL unreachable: %v", err)
	}
	return u
}

// Pool returns a pool on the test server, closed when the test ends.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, URL())
	if err == nil {
		err = pool.Ping(ctx)
		if err != nil {
			pool.Close()
		}
	}
	if err != nil {
		if Required() {
			t.Fatalf("PostgreSQL at STEAD_TEST_DATABASE_URL is required (STEAD_REQUIRE_POSTGRES=1) but unreachable: %v", err)
		}
		t.Skipf("PostgreSQL unreachable (%v); set STEAD_TEST_DATABASE_URL, or STEAD_REQUIRE_POSTGRES=1 to fail instead", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

var unsafe = regexp.MustCompile(`[^a-z0-9_]+`)

// Schema creates a fresh, uniquely named schema for the test and drops it (with everything in it)
// when the test ends. The name starts with "stead_t_" and a readable form of the test name.
func Schema(t testing.TB) string {
	t.Helper()
	pool := Pool(t)
	name := NewName(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create test schema %s: %v", name, err)
	}
	t.Cleanup(func() { Drop(t, pool, name) })
	return name
}

// NewName returns a unique schema name for the test without creating it. Pair it with Drop.
func NewName(t testing.TB) string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	base := unsafe.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(base) > 40 {
		base = base[len(base)-40:]
	}
	return "stead_t_" + strings.Trim(base, "_") + "_" + hex.EncodeToString(b[:])
}

// Drop drops the schema and everything in it.
func Drop(t testing.TB, pool *pgxpool.Pool, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
		t.Errorf("drop test schema %s: %v", name, err)
	}
}
