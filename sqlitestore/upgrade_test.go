package sqlitestore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/steadhq/stead/internal/migration"
	"github.com/steadhq/stead/internal/upgradetest"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
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
			old, err := migration.AsOf(os.DirFS("."), "migrations", release)
			if err != nil {
				t.Fatal(err)
			}
			// The version table's name is the store's ("stead_migrations"), released with it.
			if err := sqlitedb.Migrate(ctx, db, "stead_migrations", old); err != nil {
				t.Fatal(err)
			}
			rows, err := os.ReadFile("testdata/upgrade/" + release + ".sql")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.W.ExecContext(ctx, string(rows)); err != nil {
				t.Fatalf("loading %s's rows: %v", release, err)
			}
			s, err := sqlitestore.New(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			upgradetest.Store(t, s)
		})
	}
}
