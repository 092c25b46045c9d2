package pgdb_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/steadhq/stead/internal/errs"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
)

func TestCheckSchema(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"stead", true}, {"_x1", true}, {"Tenant_42", true},
		{"", false}, {"1abc", false}, {"a-b", false}, {"a b", false}, {`a"b`, false},
		{"a;drop", false}, {"pg_catalog", false}, {"information_schema", false},
		{"x234567890123456789012345678901234567890123456789012345678901234", false}, // 64 bytes
	}
	for _, tt := range tests {
		err := pgdb.CheckSchema(tt.name)
		if tt.ok != (err == nil) {
			t.Errorf("CheckSchema(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && !errors.Is(err, errs.Invalid) {
			t.Errorf("CheckSchema(%q) = %v, does not wrap ErrInvalid", tt.name, err)
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"statement timeout", &pgconn.PgError{Code: "57014"}, errs.Timeout},
		{"unique violation", &pgconn.PgError{Code: "23505"}, errs.Conflict},
		{"serialization", &pgconn.PgError{Code: "40001"}, errs.Conflict},
		{"check violation", &pgconn.PgError{Code: "23514"}, errs.Invalid},
		{"bad text", &pgconn.PgError{Code: "22021"}, errs.Invalid},
		{"too many connections", &pgconn.PgError{Code: "53300"}, errs.Unavailable},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, errs.Unavailable},
		{"already classified", fmt.Errorf("x: %w", errs.NotFound), errs.NotFound},
		{"deadline", context.DeadlineExceeded, errs.Timeout},
		{"prepared statement exists (PgBouncer)", &pgconn.PgError{Code: "42P05"}, errs.Invalid},
		{"prepared statement missing (PgBouncer)", &pgconn.PgError{Code: "26000"}, errs.Invalid},
		{"startup parameter refused (PgBouncer)", &pgconn.PgError{Code: "08P01", Message: "unsupported startup parameter: statement_timeout"}, errs.Invalid},
		{"other protocol violation", &pgconn.PgError{Code: "08P01", Message: "invalid frontend message"}, errs.Unavailable},
		{"read-only server (standby, demoted primary)", &pgconn.PgError{Code: "25006"}, errs.Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pgdb.Classify(tt.err)
			if !errors.Is(got, tt.want) {
				t.Fatalf("Classify(%v) = %v, want %v", tt.err, got, tt.want)
			}
			if !errors.Is(got, tt.err) {
				t.Fatalf("Classify dropped the original error from the chain: %v", got)
			}
		})
	}
	if pgdb.Classify(nil) != nil {
		t.Fatal("Classify(nil) != nil")
	}
}

func TestOpenRetriesThenUnavailable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	start := time.Now()
	_, err = pgdb.Open(context.Background(), "postgres://postgres@"+addr+"/postgres?connect_timeout=2",
		pgdb.Config{ConnectAttempts: 3, ConnectDelay: 20 * time.Millisecond})
	if !errors.Is(err, errs.Unavailable) {
		t.Fatalf("Connect = %v, want ErrUnavailable", err)
	}
	if time.Since(start) < 40*time.Millisecond {
		t.Fatalf("Connect returned before retrying (%v)", time.Since(start))
	}
}

func TestOpenHonoursContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := pgdb.Open(ctx, "postgres://postgres@127.0.0.1:1/postgres",
		pgdb.Config{ConnectAttempts: 1000, ConnectDelay: 10 * time.Millisecond})
	if !errors.Is(err, errs.Unavailable) {
		t.Fatalf("Connect = %v, want ErrUnavailable", err)
	}
}

func TestOpenRefusesMalformedURL(t *testing.T) {
	_, err := pgdb.Open(context.Background(), "postgres://%zz", pgdb.Config{})
	if !errors.Is(err, errs.Invalid) {
		t.Fatalf("Connect = %v, want ErrInvalid", err)
	}
}

func TestMigrateConcurrent(t *testing.T) {
	t.Parallel()
	pool := pgdbtest.Pool(t)
	schema := pgdbtest.NewName(t)
	t.Cleanup(func() { pgdbtest.Drop(t, pool, schema) })
	ms := fstest.MapFS{
		"001_widgets.sql": {Data: []byte(`CREATE TABLE {schema}widgets (id bigint PRIMARY KEY);
			CREATE OR REPLACE FUNCTION {schema}widget_count() RETURNS bigint LANGUAGE sql AS 'SELECT count(*) FROM ` + pgdb.Qualifier(schema) + `widgets'`)},
		"002_widget_names.sql": {Data: []byte(`ALTER TABLE {schema}widgets ADD COLUMN name text`)},
	}
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errc <- pgdb.Migrate(context.Background(), pool, schema, "test_migrations", ms) })
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatalf("concurrent Migrate: %v", err)
		}
	}
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM `+pgdb.Qualifier(schema)+`test_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("recorded %d migrations, want 2", n)
	}
	if _, err := pool.Exec(context.Background(), `INSERT INTO `+pgdb.Qualifier(schema)+`widgets (id, name) VALUES (1, 'a')`); err != nil {
		t.Fatalf("migrated table unusable: %v", err)
	}
	if v, err := pgdb.AppliedVersion(context.Background(), pool, schema, "test_migrations"); err != nil || v != 2 {
		t.Fatalf("AppliedVersion = %d, %v; want 2", v, err)
	}
	if v, err := pgdb.LatestVersion(ms); err != nil || v != 2 {
		t.Fatalf("LatestVersion = %d, %v; want 2", v, err)
	}
	older := fstest.MapFS{"001_widgets.sql": ms["001_widgets.sql"]}
	if err := pgdb.Migrate(context.Background(), pool, schema, "test_migrations", older); err == nil {
		t.Fatal("a build that knows fewer migrations than the schema has migrated it")
	}
}

func TestOpenRefusesNegativeSettings(t *testing.T) {
	for _, c := range []pgdb.Config{{MaxConns: -1}, {MinConns: 3, MaxConns: 2}, {StatementTimeout: -time.Second}, {ConnectAttempts: -1},
		{ConnectTimeout: -time.Second}, {PingTimeout: -time.Second}} {
		if _, err := pgdb.Open(context.Background(), pgdbtest.URL(), c); !errors.Is(err, errs.Invalid) {
			t.Errorf("Open(%+v) = %v, want ErrInvalid", c, err)
		}
	}
}

func TestMigrateRefusesUnsafeSchema(t *testing.T) {
	pool := pgdbtest.Pool(t)
	err := pgdb.Migrate(context.Background(), pool, `x"; DROP TABLE y; --`, "m", fstest.MapFS{})
	if !errors.Is(err, errs.Invalid) {
		t.Fatalf("Migrate = %v, want ErrInvalid", err)
	}
}
