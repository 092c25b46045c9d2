// Package upgradetest checks what a database made by an earlier release holds once the current
// code has migrated it. Each SQL backend keeps, in testdata/upgrade/<release>.sql, the rows a
// program wrote with that release (the same program for every backend: three executions of a
// definition "upgrade" waiting on a 72-hour timeout, u-3 finished by a "go" event, a "go" queued
// for u-1); its upgrade test creates the schema of that release (migration.AsOf), loads the rows,
// opens the backend, which migrates the rest, and hands the result to Store or Transport.
package upgradetest

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/migration"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/transport"
)

// Store checks that s serves the fixture's executions, markers and timers, and takes a commit.
func Store(t *testing.T, s *stead.Store) {
	t.Helper()
	ctx := context.Background()
	for _, want := range []struct {
		id      string
		status  stead.Status
		path    string
		version int64
	}{
		{"u-1", stead.StatusRunning, "waiting", 2},
		{"u-2", stead.StatusRunning, "waiting", 2},
		{"u-3", stead.StatusDone, "done", 3},
	} {
		exe, err := s.Load(ctx, want.id)
		if err != nil {
			t.Fatalf("Load(%s) after the upgrade: %v", want.id, err)
		}
		if exe.Status != want.status || exe.ActivePath != want.path || exe.Version != want.version || exe.DefinitionID != "upgrade" {
			t.Errorf("Load(%s) after the upgrade = %s at %q, version %d, definition %q; want %s at %q, version %d",
				want.id, exe.Status, exe.ActivePath, exe.Version, exe.DefinitionID, want.status, want.path, want.version)
		}
	}
	if _, processed, err := s.LoadForEvent(ctx, "u-3", "u-3-go"); err != nil || !processed {
		t.Errorf("LoadForEvent(u-3, u-3-go) = processed %v, %v; want processed", processed, err)
	}
	if _, processed, err := s.LoadForEvent(ctx, "u-1", "u-1-go"); err != nil || processed {
		t.Errorf("LoadForEvent(u-1, u-1-go) = processed %v, %v; want not yet", processed, err)
	}
	due, err := s.DueTimers(ctx, time.Now().Add(100*365*24*time.Hour), 10)
	if err != nil || len(due) != 2 || due[0].Path != "waiting" {
		t.Errorf("DueTimers after the upgrade = %+v, %v; want the two waiting timers", due, err)
	}
	page, err := s.List(ctx, stead.ListFilter{DefinitionID: "upgrade"})
	if err != nil || len(page.Items) != 3 {
		t.Errorf("List after the upgrade = %d items, %v; want 3", len(page.Items), err)
	}
	// The migrated schema takes writes: u-2 moves on as a step would.
	exe, err := s.Load(ctx, "u-2")
	if err != nil {
		t.Fatal(err)
	}
	exe.ActivePath, exe.Status = "done", stead.StatusDone
	c, err := s.Commit(ctx, exe, stead.Bundle{ProcessedEventID: "u-2-go", Timers: []stead.TimerOp{{Action: stead.TimerCancel, Path: "waiting"}}})
	if err != nil || c.Version != 3 {
		t.Fatalf("Commit on the upgraded schema = %+v, %v; want version 3", c, err)
	}
}

// Transport checks that tr delivers the fixture's queued event, and takes new ones.
func Transport(t *testing.T, tr *transport.Transport) {
	t.Helper()
	ctx := context.Background()
	ls, err := tr.ClaimBatch(ctx, "w", time.Minute, 0, 10)
	if err != nil || len(ls) != 1 || ls[0].Group != "u-1" || ls[0].Event.ID != "u-1-go" || ls[0].Event.Kind != "go" {
		t.Fatalf("ClaimBatch after the upgrade = %+v, %v; want u-1's go", ls, err)
	}
	if err := tr.Ack(ctx, &ls[0]); err != nil {
		t.Fatal(err)
	}
	if err := tr.Publish(ctx, "u-2", stead.Event{ID: "u-2-more", Kind: "go"}, 0); err != nil {
		t.Fatalf("Publish on the upgraded schema: %v", err)
	}
	ls, err = tr.ClaimBatch(ctx, "w", time.Minute, 0, 10)
	if err != nil || len(ls) != 1 || ls[0].Event.ID != "u-2-more" {
		t.Fatalf("ClaimBatch of a new publish = %+v, %v", ls, err)
	}
	if err := tr.Ack(ctx, &ls[0]); err != nil {
		t.Fatal(err)
	}
}

// Postgres makes schema a database of release: the release's migrations of the component in the
// current directory (migrations/, recorded in its version table) and the rows it wrote
// (testdata/upgrade/<release>.sql). The caller then opens the component on schema, which
// migrates the rest.
func Postgres(t *testing.T, pool *pgxpool.Pool, schema, versionTable, release string) {
	t.Helper()
	ctx := context.Background()
	old, rows := released(t, release)
	if err := pgdb.Migrate(ctx, pool, schema, versionTable, old); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, pgdb.Expand(rows, schema)); err != nil {
		t.Fatalf("loading %s's rows: %v", release, err)
	}
}

// SQLite is Postgres for a file: db becomes a database of release.
func SQLite(t *testing.T, db *sqlitedb.DB, versionTable, release string) {
	t.Helper()
	ctx := context.Background()
	old, rows := released(t, release)
	if err := sqlitedb.Migrate(ctx, db, versionTable, old); err != nil {
		t.Fatal(err)
	}
	if _, err := db.W.ExecContext(ctx, rows); err != nil {
		t.Fatalf("loading %s's rows: %v", release, err)
	}
}

// released returns the migrations release shipped and the rows it wrote, of the component whose
// tests run in the current directory.
func released(t *testing.T, release string) (fs.FS, string) {
	t.Helper()
	old, err := migration.AsOf(os.DirFS("."), "migrations", release)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := os.ReadFile(filepath.Join("testdata", "upgrade", release+".sql"))
	if err != nil {
		t.Fatal(err)
	}
	return old, string(rows)
}
