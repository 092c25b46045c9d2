package pgtransport_test

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgstore"
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

// One message's step with its writes in one round trip: the store's commit and the transport's
// ack are queued on a pgx.Batch inside the transaction that claimed the message, and the
// transaction commits only if the step won its compare-and-swap. A lost one rolls everything
// back, which hands the message back at once.
func Example_pipelinedStep() {
	ctx := context.Background()
	url := "postgres://app@db:5432/app"
	store, err := pgstore.Open(ctx, url, pgstore.WithSchema("stead"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	tr, err := pgtransport.New(ctx, store.Pool(), pgtransport.WithSchema("stead"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tr.Close()

	err = pgx.BeginFunc(ctx, store.Pool(), func(tx pgx.Tx) error {
		leases, err := tr.ClaimBatchTx(ctx, tx, "worker-1", 30*time.Second, 0, 1)
		if err != nil || len(leases) == 0 {
			return err
		}
		l := leases[0]
		loaded, err := store.LoadForEventsTx(ctx, tx, []stead.EventRef{{ExecutionID: l.Group, EventID: l.Event.ID}})
		if err != nil || loaded[0].Execution == nil || loaded[0].Processed {
			return err // (a real worker acks a message it must drop)
		}
		next := loaded[0].Execution.Clone()
		// ... step next with the engine ...
		b := &pgx.Batch{}
		var res stead.CommitResult
		if err := store.QueueCommit(b, next, stead.Bundle{ProcessedEventID: l.Event.ID}, &res); err != nil {
			return err
		}
		if err := tr.QueueAck(b, leases); err != nil {
			return err
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		return res.Err // a *stead.ConflictError rolls the transaction back
	})
	if err != nil {
		fmt.Println(err)
	}
}
