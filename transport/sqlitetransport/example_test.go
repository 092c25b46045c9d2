package sqlitetransport_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/sqlitetransport"
)

// Publish a batch, claim one message per group at once, and ack them together.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "stead-example")
	defer os.RemoveAll(dir)
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: filepath.Join(dir, "stead.db")})
	if err != nil {
		panic(err)
	}
	defer db.Close() // after the transport: the DB is the application's
	tr, err := sqlitetransport.New(ctx, db)
	if err != nil {
		panic(err)
	}
	defer tr.Close()

	err = tr.PublishBatch(ctx, []transport.Outgoing{
		{Group: "order-1", Event: stead.Event{ID: "e1", Kind: "paid"}},
		{Group: "order-1", Event: stead.Event{ID: "e2", Kind: "shipped"}},
		{Group: "order-2", Event: stead.Event{ID: "e3", Kind: "paid"}, Priority: 2},
	})
	if err != nil {
		panic(err)
	}
	leases, err := tr.ClaimBatch(ctx, "worker-1", 30*time.Second, 0, 10)
	if err != nil {
		panic(err)
	}
	for _, l := range leases {
		fmt.Println(l.Group, l.Event.Kind, l.Priority)
	}
	if err := tr.AckBatch(ctx, leases); err != nil {
		panic(err)
	}
	// Output:
	// order-1 paid 0
	// order-2 paid 2
}
