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
