package sqlitestore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/sqlitestore"
)

func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "stead-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	store, err := sqlitestore.Open(ctx, filepath.Join(dir, "stead.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	exe := &stead.Execution{ID: "order-1", DefinitionID: "order", Status: stead.StatusRunning, ActivePath: "paying"}
	seqs, err := store.Commit(ctx, exe, stead.Bundle{
		Emits:            []stead.Emit{{Target: "billing-1", Event: stead.Event{ID: "ev-1", Kind: "Charge"}}},
		ProcessedEventID: "start-1",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("committed version", exe.Version, "with", len(seqs), "outbox entry")

	got, processed, err := store.LoadForEvent(ctx, "order-1", "start-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.ActivePath, got.Version, processed)
	// Output:
	// committed version 1 with 1 outbox entry
	// paying 1 true
}

// Open(":memory:") gives a private database for tests; it is gone at Close.
func ExampleOpen_memory() {
	ctx := context.Background()
	store, err := sqlitestore.Open(ctx, ":memory:", sqlitestore.WithTraceCap(2))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	exe := &stead.Execution{ID: "t-1", DefinitionID: "demo", Status: stead.StatusRunning}
	for _, kind := range []string{"A", "B", "C"} {
		if _, err := store.Commit(ctx, exe, stead.Bundle{Trace: &stead.TraceStep{EventKind: kind}}); err != nil {
			log.Fatal(err)
		}
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
