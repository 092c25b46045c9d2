package sqliteturn_test

import (
	"path/filepath"
	"testing"

	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/sqliteturn"
)

// openDB opens the database file at path, closed when t ends.
func openDB(t testing.TB, path string) *sqlitedb.DB {
	t.Helper()
	db, err := sqlitedb.Open(t.Context(), sqlitedb.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// newStore returns a store on a fresh file of its own, and the file's path.
func newStore(t testing.TB, opts ...sqliteturn.Option) (turn.Stores, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "turns.db")
	return storeOn(t, openDB(t, path), opts...), path
}

// storeOn returns a store on db, migrating it.
func storeOn(t testing.TB, db *sqlitedb.DB, opts ...sqliteturn.Option) turn.Stores {
	t.Helper()
	s, err := sqliteturn.New(t.Context(), db, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
