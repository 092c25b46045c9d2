package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgstore"
)

// exampleURL is the server the examples run against.
func exampleURL() string {
	if u := os.Getenv("STEAD_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// One step of an execution on PostgreSQL: load it for an event (one query), commit the new state
// with the event it emits and the processed marker (one round-trip), then let a relay claim and
// acknowledge the emitted event.
func Example() {
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, exampleURL(), pgdb.Config{ConnectAttempts: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close() // after the store: the pool is the application's
	s, err := pgstore.New(ctx, pool, pgstore.WithSchema("stead_example"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	// Only for the example: remove the schema it creates.
	defer pool.Exec(ctx, `DROP SCHEMA stead_example CASCADE`) //nolint:errcheck

	order := &stead.Execution{ID: "order-42", DefinitionID: "checkout", Status: stead.StatusRunning,
		Context: json.RawMessage(`{"total": 30}`)}
	if _, err := s.Save(ctx, order); err != nil {
		panic(err)
	}

	exe, processed, err := s.LoadForEvent(ctx, "order-42", "pay-1")
	if err != nil {
		panic(err)
	}
	fmt.Println("already processed:", processed)
	exe.ActivePath = "paid"
	c, err := s.Commit(ctx, exe, stead.Bundle{
		Emits:            []stead.Emit{{Target: "shipping-7", Event: stead.Event{ID: "ship-42", Kind: "Ship"}}},
		ProcessedEventID: "pay-1",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("version:", c.Version, "emitted:", len(c.Seqs))

	// exe is still at version 1, so committing it again loses the compare-and-swap.
	_, err = s.Commit(ctx, exe, stead.Bundle{})
	fmt.Println(err)

	claimed, err := s.ClaimOutbox(ctx, time.Now(), 30*time.Second, 10)
	if err != nil {
		panic(err)
	}
	for _, e := range claimed {
		fmt.Println("deliver", e.Event.Kind, "to", e.Target)
	}
	if err := s.AckOutbox(ctx, []int64{claimed[0].Seq}); err != nil {
		panic(err)
	}
	// Output:
	// already processed: false
	// version: 2 emitted: 1
	// stead: stale write to "order-42": expected version 1, found 2
	// deliver Ship to shipping-7
}

// A runtime in shared-transaction mode loads, commits and does its own bookkeeping in one
// transaction of its own. The commit leaves the execution it was given alone, so a rollback
// needs no undoing.
func ExampleBackend_CommitBatchTx() {
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, exampleURL(), pgdb.Config{ConnectAttempts: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	s, err := pgstore.New(ctx, pool, pgstore.WithSchema("stead_example_tx"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	defer pool.Exec(ctx, `DROP SCHEMA stead_example_tx CASCADE`) //nolint:errcheck
	pg := s.Backend().(*pgstore.Backend)

	if _, err := s.Save(ctx, &stead.Execution{ID: "job-1", DefinitionID: "jobs", Status: stead.StatusRunning}); err != nil {
		panic(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		panic(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op once rolled back
	loaded, err := pg.LoadForEventsTx(ctx, tx, []stead.EventRef{{ExecutionID: "job-1", EventID: "tick-1"}})
	if err != nil {
		panic(err)
	}
	exe := loaded[0].Execution
	exe.Status = stead.StatusDone
	results, err := pg.CommitBatchTx(ctx, tx, []stead.CommitItem{{Execution: exe, Bundle: stead.Bundle{ProcessedEventID: "tick-1"}}})
	if err != nil {
		panic(err)
	}
	fmt.Println("in the transaction: version", results[0].Version)

	// Say the runtime's own write failed: roll back. exe is still the version 1 it loaded.
	if err := tx.Rollback(ctx); err != nil {
		panic(err)
	}
	stored, _ := s.Load(ctx, "job-1")
	fmt.Println("after rollback: execution at", exe.Version, "stored", stored.Version, stored.Status)
	// Output:
	// in the transaction: version 2
	// after rollback: execution at 1 stored 1 running
}
