package pgtransport_test

import (
	"context"
	"testing"

	"github.com/steadhq/stead/internal/upgradetest"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/transport/pgtransport"
)

// TestUpgradeFromRelease migrates a schema made by each release, with the rows that release
// wrote, to the current one (package upgradetest).
func TestUpgradeFromRelease(t *testing.T) {
	for _, release := range []string{"v0.1.0"} {
		t.Run(release, func(t *testing.T) {
			t.Parallel()
			pool, schema := pgdbtest.Pool(t), pgdbtest.Schema(t)
			upgradetest.Postgres(t, pool, schema, "transport_migrations", release)
			tr, err := pgtransport.New(context.Background(), pool, pgtransport.WithSchema(schema))
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			upgradetest.Transport(t, tr)
		})
	}
}
