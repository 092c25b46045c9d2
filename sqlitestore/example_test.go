package sqlitestore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
)

func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "stead-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// One DB per file, shared by every component that keeps its tables there.
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: filepath.Join(dir, "stead.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	store, err := sqlitestore.New(ctx, db)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close() // before db.Close: deferred calls run last in, first out

	exe := &stead.Execution{ID: "order-1", DefinitionID: "order", Status: stead.StatusRunning, ActivePath: "paying"}
	c, err := store.Commit(ctx, exe, stead.Bundle{
		Emits:            []stead.Emit{{Target: "billing-1", Event: stead.Event{ID: "ev-1", Kind: "Charge"}}},
		ProcessedEventID: "start-1",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("committed version", c.Version, "with", len(c.Seqs), "outbox entry")

	got, processed, err := store.LoadForEvent(ctx, "order-1", "start-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.ActivePath, got.Version, processed)
	// Output:
	// committed version 1 with 1 outbox entry
	// paying 1 true
}

// An in-memory database lives until the DB is closed; every connection of the DB, and so every
// component on it, sees the same one.
func ExampleNew_memory() {
	ctx := context.Background()
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: sqlitedb.Memory})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	store, err := sqlitestore.New(ctx, db, sqlitestore.WithTraceCap(2))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	exe := &stead.Execution{ID: "t-1", DefinitionID: "demo", Status: stead.StatusRunning}
	for _, kind := range []string{"A", "B", "C"} {
		c, err := store.Commit(ctx, exe, stead.Bundle{Trace: &stead.TraceStep{EventKind: kind}})
		if err != nil {
			log.Fatal(err)
		}
		exe.Version = c.Version
	}
	steps, err := store.ReadTrace(ctx, "t-1")
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range steps {
		fmt.Println(s.Index, s.EventKind)
	}
	// Output:
	// 1 B
	// 2 C
}
