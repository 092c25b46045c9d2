package pgtransport_test

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/transport/pgtransport"
)

// A worker step in one transaction: claim, do the step's own writes (for example
// pgstore.Store.CommitBatchTx on the same pool), publish what it emitted, ack, commit. If anything
// fails the transaction rolls back and the messages are claimable again at once.
func Example_sharedTransaction() {
	ctx := context.Background()
	tr, err := pgtransport.Open(ctx, "postgres://app@db:5432/app", pgtransport.WithSchema("stead"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tr.Close()

	for ctx.Err() == nil {
		var claimed int
		err := pgx.BeginFunc(ctx, tr.Pool(), func(tx pgx.Tx) error {
			leases, err := tr.ClaimBatchTx(ctx, tx, "worker-1", 30*time.Second, 0, 100)
			if err != nil || len(leases) == 0 {
				return err
			}
			claimed = len(leases)
			// ... load, step and commit the executions with the store, in tx ...
			// ... tr.PublishBatchTx(ctx, tx, emitted) ...
			return tr.AckBatchTx(ctx, tx, leases)
		})
		if err != nil {
			fmt.Println(err) // stead.ErrConflict: retry; stead.ErrUnavailable: back off
			continue
		}
		if claimed == 0 {
			_ = tr.Wait(ctx) // LISTEN/NOTIFY, with a poll as a fallback
		}
	}
}
