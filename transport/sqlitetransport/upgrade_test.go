package sqlitetransport_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/steadhq/stead/internal/upgradetest"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/transport/sqlitetransport"
)

// TestUpgradeFromRelease migrates a file made by each release, with the rows that release wrote,
// to the current schema (package upgradetest).
func TestUpgradeFromRelease(t *testing.T) {
	for _, release := range []string{"v0.1.0"} {
		t.Run(release, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: filepath.Join(t.TempDir(), "upgrade.db")})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			upgradetest.SQLite(t, db, "transport_migrations", release)
			tr, err := sqlitetransport.New(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			upgradetest.Transport(t, tr)
		})
	}
}
