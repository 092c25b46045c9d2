package sqlitetransport

import (
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/transport/transporttest"
)

// TestUpgradeToFlowsKeepsGroups fills a file at schema version 1, then opens the transport on it,
// which migrates it: the groups published before are claimable through the rebuilt indexes of
// the claim order, prioritised or not, and unlimited.
func TestUpgradeToFlowsKeepsGroups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: filepath.Join(t.TempDir(), "upgrade.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	first, err := fs.ReadFile(migrations, "001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlitedb.Migrate(ctx, db, migrationsTable, fstest.MapFS{"001_init.sql": {Data: first}}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []struct {
		id       string
		priority int
	}{{"G", 0}, {"P", 2}} {
		ev, err := json.Marshal(transporttest.Event(g.id))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.W.ExecContext(ctx, `INSERT INTO transport_groups (group_id, priority) VALUES (?1, ?2)`, g.id, g.priority); err != nil {
			t.Fatal(err)
		}
		if _, err := db.W.ExecContext(ctx, `INSERT INTO transport_messages (group_id, event) VALUES (?1, ?2)`, g.id, string(ev)); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ls, err := tr.ClaimBatch(ctx, "w", time.Minute, 1, 10)
	if err != nil || len(ls) != 1 || ls[0].Event.ID != "P" {
		t.Fatalf("prioritised ClaimBatch after the upgrade = %+v, %v; want P", ls, err)
	}
	ls, err = tr.ClaimBatch(ctx, "w", time.Minute, 0, 10)
	if err != nil || len(ls) != 1 || ls[0].Event.ID != "G" {
		t.Fatalf("ClaimBatch after the upgrade = %+v, %v; want G", ls, err)
	}
	if err := tr.Ack(ctx, &ls[0]); err != nil {
		t.Fatal(err)
	}
}
