package memstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/memstore"
)

// One step of an execution: load it for an event, commit the new state with the event it emits
// and the processed marker, then let a relay claim and acknowledge the emitted event.
func Example() {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()

	order := &stead.Execution{ID: "order-42", DefinitionID: "checkout", Status: stead.StatusRunning,
		Context: json.RawMessage(`{"total": 30}`)}
	if _, err := s.Save(ctx, order); err != nil {
		panic(err)
	}

	// A worker receives event "pay-1" for the order.
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
	fmt.Println("version:", c.Version, "outbox seqs:", c.Seqs)

	// A redelivery of the same event is recognised.
	_, processed, _ = s.LoadForEvent(ctx, "order-42", "pay-1")
	fmt.Println("already processed:", processed)

	// A relay claims the emitted event under a lease, delivers it and acknowledges it.
	now := time.Now()
	claimed, _ := s.ClaimOutbox(ctx, now, 30*time.Second, 10)
	for _, e := range claimed {
		fmt.Printf("deliver %s to %s\n", e.Event.Kind, e.Target)
	}
	again, _ := s.ClaimOutbox(ctx, now, 30*time.Second, 10)
	fmt.Println("claimable while leased:", len(again))
	_ = s.AckOutbox(ctx, []int64{claimed[0].Seq})
	left, _ := s.PendingOutbox(ctx, "", 10)
	fmt.Println("pending after ack:", len(left))

	// Output:
	// already processed: false
	// version: 2 outbox seqs: [1]
	// already processed: true
	// deliver Ship to shipping-7
	// claimable while leased: 0
	// pending after ack: 0
}

// Counting what a listing filter matches, by status and by definition, without paging.
func ExampleNew_count() {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	for i, st := range []stead.Status{stead.StatusRunning, stead.StatusRunning, stead.StatusDone, stead.StatusFailed} {
		exe := &stead.Execution{ID: fmt.Sprintf("order-%d", i), DefinitionID: "checkout", Status: st}
		if _, err := s.Save(ctx, exe); err != nil {
			panic(err)
		}
	}
	c, err := s.Count(ctx, stead.ListFilter{DefinitionID: "checkout"})
	if err != nil {
		panic(err)
	}
	fmt.Println("total:", c.Total)
	fmt.Println("running:", c.ByStatus[stead.StatusRunning], "done:", c.ByStatus[stead.StatusDone], "failed:", c.ByStatus[stead.StatusFailed])
	fmt.Println("checkout:", c.ByDefinition["checkout"])

	// Output:
	// total: 4
	// running: 2 done: 1 failed: 1
	// checkout: 4
}
