package pgstore_test

import (
	"context"
	"testing"

	"github.com/steadhq/stead/internal/upgradetest"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/pgstore"
)

// TestUpgradeFromRelease migrates a schema made by each release, with the rows that release
// wrote, to the current one (package upgradetest).
func TestUpgradeFromRelease(t *testing.T) {
	for _, release := range []string{"v0.1.0"} {
		t.Run(release, func(t *testing.T) {
			t.Parallel()
			pool, schema := pgdbtest.Pool(t), pgdbtest.Schema(t)
			upgradetest.Postgres(t, pool, schema, "stead_migrations", release)
			s, err := pgstore.New(context.Background(), pool, pgstore.WithSchema(schema))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			upgradetest.Store(t, s)
		})
	}
}
