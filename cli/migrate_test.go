package cli

import (
	"context"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/sqlitedb"
)

// versionTables are the version tables of every component a stead database holds: the execution
// store, the transport and the turn store.
var versionTables = []string{"stead_migrations", "transport_migrations", "turn_migrations"}

// TestMigrateEveryComponent runs migrate on a fresh database of each kind and finds every
// component's schema recorded, the turn store's included; a second run finds nothing to do.
func TestMigrateEveryComponent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// fresh returns the --store (and --schema) arguments of a new database, and a function
		// that counts the versions recorded in one version table.
		fresh func(t *testing.T) (args []string, versions func(table string) int)
	}{
		{"sqlite", func(t *testing.T) ([]string, func(string) int) {
			path := filepath.Join(t.TempDir(), "m.db")
			return []string{"--store", path}, func(table string) int {
				db, err := sqlitedb.Open(t.Context(), sqlitedb.Config{Path: path})
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				var n int
				if err := db.R.QueryRowContext(t.Context(), `SELECT count(*) FROM `+table).Scan(&n); err != nil {
					t.Fatalf("%s: %v", table, err)
				}
				return n
			}
		}},
		{"postgres", func(t *testing.T) ([]string, func(string) int) {
			schema := pgdbtest.Schema(t)
			pool := pgdbtest.Pool(t)
			return []string{"--store", pgdbtest.URL(), "--schema", schema}, func(table string) int {
				var n int
				if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM `+pgx.Identifier{schema, table}.Sanitize()).Scan(&n); err != nil {
					t.Fatalf("%s: %v", table, err)
				}
				return n
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args, versions := tc.fresh(t)
			var first map[string]int
			for run := range 2 {
				code, out, errOut := cli(t, context.Background(), append([]string{"migrate"}, args...)...)
				if code != 0 || !strings.Contains(out, "schema up to date") || !strings.Contains(out, tc.name) ||
					!strings.Contains(out, "turns") {
					t.Fatalf("migrate run %d: exit %d, stdout %q, stderr %q", run+1, code, out, errOut)
				}
				got := map[string]int{}
				for _, table := range versionTables {
					if got[table] = versions(table); got[table] == 0 {
						t.Errorf("run %d: %s records no version", run+1, table)
					}
				}
				if first == nil {
					first = got
				} else if !maps.Equal(first, got) {
					t.Errorf("a second migrate changed the recorded versions: %v, then %v", first, got)
				}
			}
		})
	}
}
