package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// counter is a component's write statements, prepared by name.
type counter struct {
	Bump, Get *sql.Stmt
}

var counterTexts = map[string]string{
	"sqlBump": `INSERT INTO n (k, v) VALUES ('x', 1) ON CONFLICT (k) DO UPDATE SET v = v + 1`,
	"sqlGet":  `SELECT coalesce((SELECT v FROM n WHERE k = 'x'), 0)`,
}

// withCounter opens a database with table n and a counter prepared on its writer, by two
// components at once: both run on the one writer connection.
func withCounter(t *testing.T) (*DB, *counter, *counter) {
	t.Helper()
	d := openT(t, Config{Path: filepath.Join(t.TempDir(), "w.db")})
	if _, err := d.W.Exec(`CREATE TABLE n (k TEXT PRIMARY KEY, v INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	a, b := &counter{}, &counter{}
	for _, c := range []*counter{a, b} {
		if err := d.PrepareWrites(t.Context(), c, counterTexts); err != nil {
			t.Fatal(err)
		}
	}
	return d, a, b
}

func value(t *testing.T, d *DB) int {
	t.Helper()
	var v int
	if err := d.R.QueryRow(counterTexts["sqlGet"]).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestBeginHoldsTheWritesOfSeveralComponents: two components' statements run in one transaction
// and commit together, or not at all: a rollback, a cancelled context at COMMIT and an error of
// Write's fn leave nothing, and AfterCommit runs only after a commit.
func TestBeginHoldsTheWritesOfSeveralComponents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		end    func(ctx context.Context, cancel context.CancelFunc, tx *Tx) error
		want   int
		wantOK bool
	}{
		{"commit", func(ctx context.Context, _ context.CancelFunc, tx *Tx) error { return tx.Commit(ctx) }, 2, true},
		{"rollback", func(context.Context, context.CancelFunc, *Tx) error { return errors.New("rolled back") }, 0, false},
		{"cancelled before commit", func(ctx context.Context, cancel context.CancelFunc, tx *Tx) error {
			cancel()
			return tx.Commit(ctx)
		}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, a, b := withCounter(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			tx, err := d.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			committed := false
			tx.AfterCommit(func() { committed = true })
			for _, c := range []*counter{a, b} {
				if _, err := c.Bump.Exec(); err != nil {
					t.Fatal(err)
				}
			}
			err = tt.end(ctx, cancel, tx)
			tx.Rollback() // after Commit it does nothing
			if (err == nil) != tt.wantOK {
				t.Fatalf("end: %v", err)
			}
			if got := value(t, d); got != tt.want || committed != tt.wantOK {
				t.Errorf("value %d (want %d), after-commit hook ran %v (want %v)", got, tt.want, committed, tt.wantOK)
			}
			// The gate is free again: a write of its own goes through.
			if err := d.Write(t.Context(), func(*Tx) error { _, err := a.Bump.Exec(); return err }); err != nil {
				t.Fatal(err)
			}
			if got := value(t, d); got != tt.want+1 {
				t.Errorf("after a write of its own: %d, want %d", got, tt.want+1)
			}
		})
	}
}

func TestWriteRollsBackAnError(t *testing.T) {
	t.Parallel()
	d, a, _ := withCounter(t)
	boom := errors.New("boom")
	ran := false
	err := d.Write(t.Context(), func(tx *Tx) error {
		tx.AfterCommit(func() { ran = true })
		if _, err := a.Bump.Exec(); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || ran || value(t, d) != 0 {
		t.Fatalf("Write: %v, hook ran %v, value %d: want boom, no hook, nothing written", err, ran, value(t, d))
	}
}

// TestBeginWaitsForTheGate: a transaction holds the gate until it ends; Begin waits for it,
// honouring ctx.
func TestBeginWaitsForTheGate(t *testing.T) {
	t.Parallel()
	d, _, _ := withCounter(t)
	tx, err := d.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := d.Begin(short); err == nil {
		t.Fatal("a second transaction began while the first held the gate")
	}
	tx.Rollback()
	tx2, err := d.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tx2.Rollback()
}

// TestWriterReopensAfterItBroke: a writer connection discarded (a failed ROLLBACK) is replaced on
// the next transaction, with every component's statements prepared on the new one.
func TestWriterReopensAfterItBroke(t *testing.T) {
	t.Parallel()
	d, a, b := withCounter(t)
	if err := d.Lock(t.Context()); err != nil {
		t.Fatal(err)
	}
	old := d.w.conn
	d.discard()
	d.Unlock()
	if a.Bump != nil || b.Bump != nil {
		t.Fatal("the statements of the broken connection were kept")
	}
	for _, c := range []*counter{a, b} {
		if err := d.Write(t.Context(), func(*Tx) error { _, err := c.Bump.Exec(); return err }); err != nil {
			t.Fatal(err)
		}
	}
	if d.w.conn == old || value(t, d) != 2 {
		t.Fatalf("after the reopen: new connection %v, value %d (want 2)", d.w.conn != old, value(t, d))
	}
}

func TestPrepareWritesRefusesAndForgets(t *testing.T) {
	t.Parallel()
	d, _, _ := withCounter(t)
	bad := &counter{}
	if err := d.PrepareWrites(t.Context(), bad, map[string]string{"sqlBump": "NOT SQL", "sqlGet": "SELECT 1"}); err == nil {
		t.Fatal("a statement that does not prepare was accepted")
	}
	if n := len(d.w.sets); n != 2 {
		t.Errorf("%d sets on the writer, want the 2 that prepared", n)
	}
	missing := &counter{}
	if err := d.PrepareWrites(t.Context(), missing, map[string]string{"sqlBump": "SELECT 1"}); err == nil {
		t.Fatal("a field without its statement was accepted")
	}
	d.ReleaseWrites(missing)
}
