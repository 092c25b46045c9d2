package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/steadhq/stead/internal/errs"
	sqlite3 "modernc.org/sqlite/lib"
)

func openT(t *testing.T, c Config) *DB {
	t.Helper()
	d, err := Open(t.Context(), c)
	if err != nil {
		t.Fatalf("Open(%+v): %v", c, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func pragma(t *testing.T, db *sql.DB, name string) string {
	t.Helper()
	var v string
	if err := db.QueryRow("PRAGMA " + name).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return v
}

func TestOpenSetsPragmas(t *testing.T) {
	t.Parallel()
	tests := []struct {
		sync     Synchronous
		wantSync string
	}{
		{"", "1"}, {SyncNormal, "1"}, {SyncFull, "2"},
	}
	for _, tt := range tests {
		t.Run(string(tt.sync), func(t *testing.T) {
			d := openT(t, Config{Path: filepath.Join(t.TempDir(), "x.db"), Synchronous: tt.sync, BusyTimeout: 1234 * time.Millisecond})
			for db, want := range map[*sql.DB]map[string]string{
				d.W: {"journal_mode": "wal", "synchronous": tt.wantSync, "foreign_keys": "1", "busy_timeout": "0", "query_only": "0"},
				d.R: {"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "1234", "query_only": "1"},
			} {
				for name, v := range want {
					if got := pragma(t, db, name); got != v {
						t.Errorf("PRAGMA %s = %s, want %s", name, got, v)
					}
				}
			}
			if _, err := d.R.Exec(`CREATE TABLE t (x)`); err == nil {
				t.Error("a reader connection could write")
			}
		})
	}
}

func TestOpenMemory(t *testing.T) {
	t.Parallel()
	d := openT(t, Config{Path: Memory})
	if !d.Memory {
		t.Fatal("Memory is not set")
	}
	if _, err := d.W.Exec(`CREATE TABLE t (x)`); err != nil {
		t.Fatal(err)
	}
	// Two writer connections (two components) and the readers see one database.
	c, err := d.W.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(t.Context(), `INSERT INTO t VALUES (1)`); err != nil {
		t.Fatalf("a second writer connection does not see the table: %v", err)
	}
	var n int
	if err := d.R.QueryRow(`SELECT COUNT(*) FROM t`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("readers see %d rows, %v", n, err)
	}
	if got := pragma(t, d.W, "journal_mode"); got != "memory" {
		t.Fatalf("journal_mode = %s", got)
	}
	other := openT(t, Config{Path: Memory})
	if _, err := other.W.Exec(`SELECT * FROM t`); err == nil {
		t.Fatal("two in-memory databases share their tables")
	}
}

func TestLockQueuesAndHonoursContext(t *testing.T) {
	t.Parallel()
	d := openT(t, Config{Path: Memory})
	if err := d.Lock(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := d.Lock(ctx); !errors.Is(err, errs.Unavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock while held = %v, want Unavailable wrapping the deadline", err)
	}
	d.Unlock()
	if err := d.Lock(t.Context()); err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	d.Unlock()
}

// TestOpenPathWithURICharacters opens files whose names hold the characters a "file:" URI
// reserves, and checks that the database lands in the file named, not in a truncated one.
func TestOpenPathWithURICharacters(t *testing.T) {
	t.Parallel()
	tests := []string{"a?mode=ro.db", "b#frag.db", "c%20d.db", "e f.db", "dir with space/g?h#i j.db"}
	for _, name := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), name)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			d := openT(t, Config{Path: path})
			if _, err := d.W.Exec(`CREATE TABLE t (x)`); err != nil {
				t.Fatal(err)
			}
			var file string
			if err := d.R.QueryRow(`SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&file); err != nil {
				t.Fatal(err)
			}
			if file != path {
				t.Fatalf("database file is %q, want %q", file, path)
			}
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("the file named was not created: %v", err)
			}
		})
	}
}

func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    Config
		want error
	}{
		{"empty path", Config{}, errs.Invalid},
		{"NUL", Config{Path: "a\x00"}, errs.Invalid},
		{"bad synchronous", Config{Path: "x.db", Synchronous: "EXTRA"}, errs.Invalid},
		{"negative busy timeout", Config{Path: "x.db", BusyTimeout: -1}, errs.Invalid},
		{"no such directory", Config{Path: filepath.Join(t.TempDir(), "a", "b", "x.db")}, errs.Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Open(t.Context(), tt.c)
			if err == nil {
				d.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Open: %v, want %v", err, tt.want)
			}
		})
	}
}

// sqliteErr makes SQLite produce a real error for each case.
func sqliteErr(t *testing.T, setup []string, stmt string) error {
	t.Helper()
	d := openT(t, Config{Path: filepath.Join(t.TempDir(), "x.db")})
	for _, s := range setup {
		if _, err := d.W.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	_, err := d.W.Exec(stmt)
	if err == nil {
		t.Fatalf("%s succeeded", stmt)
	}
	return err
}

func TestClassify(t *testing.T) {
	t.Parallel()
	table := []string{`CREATE TABLE p (id TEXT PRIMARY KEY, u TEXT UNIQUE, n TEXT NOT NULL, CHECK (length(n) < 5))`,
		`INSERT INTO p VALUES ('a', 'u', 'n')`, `CREATE TABLE c (p TEXT REFERENCES p (id))`}
	tests := []struct {
		name string
		err  func(t *testing.T) error
		want error
	}{
		{"primary key", func(t *testing.T) error { return sqliteErr(t, table, `INSERT INTO p VALUES ('a', 'v', 'n')`) }, errs.Conflict},
		{"unique", func(t *testing.T) error { return sqliteErr(t, table, `INSERT INTO p VALUES ('b', 'u', 'n')`) }, errs.Conflict},
		{"not null", func(t *testing.T) error { return sqliteErr(t, table, `INSERT INTO p VALUES ('b', 'v', NULL)`) }, errs.Invalid},
		{"check", func(t *testing.T) error { return sqliteErr(t, table, `INSERT INTO p VALUES ('b', 'v', 'toolong')`) }, errs.Invalid},
		{"foreign key", func(t *testing.T) error { return sqliteErr(t, table, `INSERT INTO c VALUES ('zz')`) }, errs.Invalid},
		{"busy", realBusy, errs.Unavailable},
		{"closed", func(t *testing.T) error {
			d, err := Open(t.Context(), Config{Path: filepath.Join(t.TempDir(), "x.db")})
			if err != nil {
				t.Fatal(err)
			}
			d.Close()
			_, err = d.W.Exec(`SELECT 1`)
			return err
		}, errs.Closed},
		{"deadline", func(t *testing.T) error { return fmt.Errorf("x: %w", context.DeadlineExceeded) }, errs.Timeout},
		{"already classified", func(t *testing.T) error { return fmt.Errorf("x: %w", errs.NotFound) }, errs.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err(t)
			got := Classify(err)
			if !errors.Is(got, tt.want) {
				t.Fatalf("Classify(%v) = %v, want %v", err, got, tt.want)
			}
			if !errors.Is(got, err) {
				t.Fatalf("Classify(%v) dropped the original error", err)
			}
		})
	}
	if Classify(nil) != nil {
		t.Fatal("Classify(nil) != nil")
	}
	plain := errors.New("plain")
	if Classify(plain) != plain {
		t.Fatal("an unknown error was changed")
	}
	if Classify(context.Canceled) != context.Canceled {
		t.Fatal("a cancelled context was classified")
	}
}

// realBusy returns a real SQLITE_BUSY: two writer connections contending for the write lock.
func realBusy(t *testing.T) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.db")
	a := openT(t, Config{Path: path, BusyTimeout: time.Millisecond})
	b := openT(t, Config{Path: path, BusyTimeout: time.Millisecond})
	tx, err := a.W.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	_, err = b.W.Begin()
	if err == nil {
		t.Fatal("two writers began at once")
	}
	return err
}

func TestRealBusyIsBusy(t *testing.T) {
	t.Parallel()
	err := realBusy(t)
	if !IsBusy(err) || Code(err) != sqlite3.SQLITE_BUSY {
		t.Fatalf("BEGIN IMMEDIATE against a held write lock: %v (code %d), want SQLITE_BUSY", err, Code(err))
	}
	if !errors.Is(Classify(err), errs.Unavailable) {
		t.Fatalf("Classify(busy) = %v", Classify(err))
	}
}

func TestRetry(t *testing.T) {
	t.Parallel()
	busy := realBusy(t)
	t.Run("succeeds after busy", func(t *testing.T) {
		n := 0
		err := Retry(t.Context(), time.Second, func() error {
			if n++; n < 3 {
				return busy
			}
			return nil
		})
		if err != nil || n != 3 {
			t.Fatalf("Retry = %v after %d calls", err, n)
		}
	})
	t.Run("gives up after the budget", func(t *testing.T) {
		start := time.Now()
		err := Retry(t.Context(), 30*time.Millisecond, func() error { return busy })
		if !errors.Is(err, errs.Unavailable) || !IsBusy(err) {
			t.Fatalf("Retry = %v, want Unavailable wrapping the busy error", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("Retry took %v for a 30ms budget", d)
		}
	})
	t.Run("other errors are not retried", func(t *testing.T) {
		n := 0
		want := errors.New("x")
		if err := Retry(t.Context(), time.Second, func() error { n++; return want }); err != want || n != 1 {
			t.Fatalf("Retry = %v after %d calls", err, n)
		}
	})
	t.Run("stops with ctx", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err := Retry(ctx, time.Minute, func() error { return busy })
		if !errors.Is(err, context.Canceled) || !errors.Is(err, errs.Unavailable) {
			t.Fatalf("Retry = %v", err)
		}
	})
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.db")
	one := fstest.MapFS{"001_one.sql": {Data: []byte(`CREATE TABLE a (x INTEGER); INSERT INTO a VALUES (1);`)}}
	two := fstest.MapFS{
		"001_one.sql": one["001_one.sql"],
		"002_two.sql": {Data: []byte(`ALTER TABLE a ADD COLUMN y TEXT; UPDATE a SET y = 'v';`)},
	}
	// Many databases on one file migrate at once: each migration runs once.
	var wg sync.WaitGroup
	dbs := make([]*DB, 4)
	for i := range dbs {
		dbs[i] = openT(t, Config{Path: path})
	}
	errc := make(chan error, len(dbs))
	for _, d := range dbs {
		wg.Go(func() { errc <- Migrate(t.Context(), d, "m", two) })
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	var rows, versions int
	var y string
	if err := dbs[0].R.QueryRow(`SELECT COUNT(*), MAX(y) FROM a`).Scan(&rows, &y); err != nil || rows != 1 || y != "v" {
		t.Fatalf("table a: %d rows, y=%q, %v", rows, y, err)
	}
	if err := dbs[0].R.QueryRow(`SELECT COUNT(*) FROM m`).Scan(&versions); err != nil || versions != 2 {
		t.Fatalf("%d versions recorded, %v", versions, err)
	}
	if err := Migrate(t.Context(), dbs[0], "m", one); err == nil {
		t.Fatal("migrating to an older schema than recorded succeeded")
	}
	if err := Migrate(t.Context(), dbs[0], "bad name", two); !errors.Is(err, errs.Invalid) {
		t.Fatalf("an unsafe table name: %v, want Invalid", err)
	}
	bad := fstest.MapFS{"003_broken.sql": {Data: []byte(`CREATE TABLE a (x)`)}}
	for k, v := range two {
		bad[k] = v
	}
	if err := Migrate(t.Context(), dbs[0], "m", bad); err == nil {
		t.Fatal("a failing migration succeeded")
	}
	if err := dbs[0].R.QueryRow(`SELECT COUNT(*) FROM m`).Scan(&versions); err != nil || versions != 2 {
		t.Fatalf("a failed migration was recorded: %d versions, %v", versions, err)
	}
}

func TestDSN(t *testing.T) {
	t.Parallel()
	tests := []struct{ path, want string }{
		{"/a/b.db", "file:/a/b.db?_pragma=x%281%29&_txlock=immediate"},
		{"/a/q?#%.db", "file:/a/q%3f%23%25.db?_pragma=x%281%29&_txlock=immediate"},
	}
	for _, tt := range tests {
		if got := dsn(tt.path, false, []string{"x(1)"}, "_txlock=immediate"); got != tt.want {
			t.Errorf("dsn(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
	if got, want := dsn("/stead-1", true, nil), "file:/stead-1?vfs=memdb&"; got != want {
		t.Errorf("memory dsn = %q, want %q", got, want)
	}
}
