package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgstore"
)

// One step of an execution on PostgreSQL: load it for an event (one query), commit the new state
// with the event it emits and the processed marker (one round-trip), then let a relay claim and
// acknowledge the emitted event.
func Example() {
	ctx := context.Background()
	dsn := os.Getenv("STEAD_TEST_DATABASE_URL")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	s, err := pgstore.Open(ctx, dsn, pgstore.WithSchema("stead_example"), pgstore.WithConnectRetry(3, time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	// Only for the example: remove the schema it creates.
	defer s.Pool().Exec(ctx, `DROP SCHEMA stead_example CASCADE`) //nolint:errcheck

	order := &stead.Execution{ID: "order-42", DefinitionID: "checkout", Status: stead.StatusRunning,
		Context: json.RawMessage(`{"total": 30}`)}
	if err := stead.Save(ctx, s, order); err != nil {
		panic(err)
	}

	exe, processed, err := s.LoadForEvent(ctx, "order-42", "pay-1")
	if err != nil {
		panic(err)
	}
	fmt.Println("already processed:", processed)
	exe.ActivePath = "paid"
	seqs, err := s.Commit(ctx, exe, stead.Bundle{
		Emits:            []stead.Emit{{Target: "shipping-7", Event: stead.Event{ID: "ship-42", Kind: "Ship"}}},
		ProcessedEventID: "pay-1",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("version:", exe.Version, "emitted:", len(seqs))

	// A stale copy loses the compare-and-swap.
	stale := exe.Clone()
	stale.Version = 1
	_, err = s.Commit(ctx, stale, stead.Bundle{})
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
// transaction of its own; on rollback it puts the versions back.
func ExampleStore_CommitBatchTx() {
	ctx := context.Background()
	dsn := os.Getenv("STEAD_TEST_DATABASE_URL")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	s, err := pgstore.Open(ctx, dsn, pgstore.WithSchema("stead_example_tx"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	defer s.Pool().Exec(ctx, `DROP SCHEMA stead_example_tx CASCADE`) //nolint:errcheck

	if err := stead.Save(ctx, s, &stead.Execution{ID: "job-1", DefinitionID: "jobs", Status: stead.StatusRunning}); err != nil {
		panic(err)
	}
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		panic(err)
	}
	loaded, err := s.LoadForEventsTx(ctx, tx, []stead.EventRef{{ExecutionID: "job-1", EventID: "tick-1"}})
	if err != nil {
		panic(err)
	}
	exe := loaded[0].Execution
	exe.Status = stead.StatusDone
	items := []stead.CommitItem{{Execution: exe, Bundle: stead.Bundle{ProcessedEventID: "tick-1"}}}
	results, err := s.CommitBatchTx(ctx, tx, items)
	if err != nil {
		panic(err)
	}
	fmt.Println("in the transaction: version", exe.Version)

	// Say the runtime's own write failed: roll back, and put the versions back.
	if err := tx.Rollback(ctx); err != nil {
		panic(err)
	}
	pgstore.UndoVersions(items, results)
	stored, _ := s.Load(ctx, "job-1")
	fmt.Println("after rollback: version", exe.Version, "stored", stored.Version, stored.Status)
	// Output:
	// in the transaction: version 2
	// after rollback: version 1 stored 1 running
}
