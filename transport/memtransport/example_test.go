package memtransport_test

import (
	"context"
	"fmt"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport/memtransport"
)

// A worker's loop: claim, handle, ack; wait when nothing is claimable.
func Example() {
	ctx := context.Background()
	tr := memtransport.New()
	defer tr.Close()

	_ = tr.Publish(ctx, "order-1", stead.Event{ID: "e1", Kind: "paid"}, 0)
	_ = tr.Publish(ctx, "order-1", stead.Event{ID: "e2", Kind: "shipped"}, 0)
	_ = tr.Publish(ctx, "order-2", stead.Event{ID: "e3", Kind: "paid"}, 0)

	for {
		l, err := tr.Claim(ctx, "worker-1", 30*time.Second, 0)
		if err != nil {
			panic(err)
		}
		if l == nil {
			break // a long-running worker would tr.Wait(ctx) here instead
		}
		fmt.Println(l.Group, l.Event.Kind)
		if err := tr.Ack(ctx, l); err != nil {
			panic(err)
		}
	}
	// Output:
	// order-1 paid
	// order-2 paid
	// order-1 shipped
}
