package dispatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/dispatch"
	"github.com/steadhq/stead/turn/memturn"
)

// A dispatcher delivering the outbox of a turn store through a mailer. RunOnce runs one round;
// a service would call Run(ctx) instead and cancel ctx to stop it.
func Example() {
	ctx := context.Background()
	stores := memturn.New()
	id := turn.NewID()
	_ = stores.Outbox.Enqueue(ctx, turn.OutboxEntry{OutboxID: id, CommandID: turn.NewID(), Destination: "mailer",
		Payload: json.RawMessage(`{"to":"ada@example.com"}`), IdempotencyKey: "welcome-ada",
		Status: turn.OutboxPending, CreatedAt: time.Now()})

	mailer := dispatch.SenderFunc(func(ctx context.Context, e turn.OutboxEntry) error {
		fmt.Printf("mailing %s (key %s)\n", e.Payload, e.IdempotencyKey)
		return nil // a definite failure would be dispatch.Retry or dispatch.Reject
	})
	d, err := dispatch.New(stores.Outbox, mailer, dispatch.Config{WorkerID: "mailer-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	report, err := d.RunOnce(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	rec, _ := stores.Outbox.LoadOutbox(ctx, id)
	fmt.Printf("claimed %d, completed %d; the row is %s\n", report.Claimed, report.Completed, rec.Entry.Status)
	// Output:
	// mailing {"to":"ada@example.com"} (key welcome-ada)
	// claimed 1, completed 1; the row is completed
}
