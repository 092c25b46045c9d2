package sqlitestore_test

import (
	"path/filepath"
	"testing"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
	"github.com/steadhq/stead/storetest"
)

// TestConformance runs the storetest suite with a fresh database file per subtest.
func TestConformance(t *testing.T) {
	storetest.Run(t, factory(func(t *testing.T) string { return filepath.Join(t.TempDir(), "stead.db") }))
}

// TestConformanceMemory runs the suite again on in-memory databases.
func TestConformanceMemory(t *testing.T) {
	storetest.Run(t, factory(func(*testing.T) string { return sqlitedb.Memory }))
}

func factory(path func(*testing.T) string) storetest.Factory {
	return func(t *testing.T, cfg storetest.Config) *stead.Store {
		var opts []sqlitestore.Option
		if cfg.TraceCap != 0 {
			opts = append(opts, sqlitestore.WithTraceCap(cfg.TraceCap))
		}
		return newStore(t, openDB(t, sqlitedb.Config{Path: path(t)}), opts...)
	}
}
