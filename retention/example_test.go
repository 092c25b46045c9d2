package retention_test

import (
	"context"
	"fmt"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/retention"
)

// An order finished a month ago with its two region children; a running order does not. The
// sweep purges the finished tree, after showing it to an archiver, and leaves the other.
func ExamplePurgeFinished() {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	now := time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC)
	month := now.Add(-31 * 24 * time.Hour)
	for _, e := range []*stead.Execution{
		{ID: "order-1", DefinitionID: "order", Status: stead.StatusDone, FinishedAt: month},
		{ID: "order-1:fulfilment.packing:0", DefinitionID: "order", Status: stead.StatusDone, ParentID: "order-1", FinishedAt: month},
		{ID: "order-1:fulfilment.invoicing:0", DefinitionID: "order", Status: stead.StatusCancelled, ParentID: "order-1", FinishedAt: month},
		{ID: "order-2", DefinitionID: "order", Status: stead.StatusRunning},
	} {
		if _, err := store.Save(ctx, e); err != nil {
			panic(err)
		}
	}
	rep, err := retention.PurgeFinished(ctx, store, retention.Sweep{
		OlderThan: 30 * 24 * time.Hour, Now: func() time.Time { return now },
		Archive: func(_ context.Context, t retention.Tree) error {
			fmt.Println("archiving", t.Root, "with", len(t.Executions)-1, "descendants")
			return nil
		},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("purged", rep.Purged, "trees,", rep.Deleted, "executions")
	_, err = store.Load(ctx, "order-2")
	fmt.Println("order-2 kept:", err == nil)
	// Output:
	// archiving order-1 with 2 descendants
	// purged 1 trees, 3 executions
	// order-2 kept: true
}

// A tree with a member that has not ended is refused, and nothing is deleted; a failed region
// child under a finished root does not keep its tree.
func ExamplePurgeTree() {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	for _, e := range []*stead.Execution{
		{ID: "order-1", DefinitionID: "order", Status: stead.StatusDone},
		{ID: "order-1:fulfilment.packing:0", DefinitionID: "order", Status: stead.StatusRunning, ParentID: "order-1"},
		{ID: "order-2", DefinitionID: "order", Status: stead.StatusDone},
		{ID: "order-2:fulfilment.packing:0", DefinitionID: "order", Status: stead.StatusFailed, ParentID: "order-2"},
	} {
		if _, err := store.Save(ctx, e); err != nil {
			panic(err)
		}
	}
	_, err := retention.PurgeTree(ctx, store, "order-1", retention.Options{})
	fmt.Println(err)
	res, err := retention.PurgeTree(ctx, store, "order-2", retention.Options{})
	fmt.Println(res.Deleted, err)
	// Output:
	// stead: purge "order-1:fulfilment.packing:0": execution is running: the root of "order-1" must be done or cancelled, and every descendant done, cancelled or failed
	// 2 <nil>
}
