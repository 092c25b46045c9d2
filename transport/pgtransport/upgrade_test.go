package pgtransport_test

import (
	"context"
	"os"
	"testing"

	"github.com/steadhq/stead/internal/migration"
	"github.com/steadhq/stead/internal/upgradetest"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/transport/pgtransport"
)

// TestUpgradeFromRelease migrates a schema made by each release, with the rows that release
// wrote, to the current one (package upgradetest).
func TestUpgradeFromRelease(t *testing.T) {
	for _, release := range []string{"v0.1.0"} {
		t.Run(release, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool, schema := pgdbtest.Pool(t), pgdbtest.Schema(t)
			old, err := migration.AsOf(os.DirFS("."), "migrations", release)
			if err != nil {
				t.Fatal(err)
			}
			// The version table's name is the transport's ("transport_migrations"), released with it.
			if err := pgdb.Migrate(ctx, pool, schema, "transport_migrations", old); err != nil {
				t.Fatal(err)
			}
			rows, err := os.ReadFile("testdata/upgrade/" + release + ".sql")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, pgdb.Expand(string(rows), schema)); err != nil {
				t.Fatalf("loading %s's rows: %v", release, err)
			}
			tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema(schema))
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			upgradetest.Transport(t, tr)
		})
	}
}
