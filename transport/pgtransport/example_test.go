package pgtransport_test

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/transport/pgtransport"
)

// A worker's loop on the application's pool: claim, handle, ack; wait (LISTEN/NOTIFY, with a
// poll as a fallback) when nothing is claimable. It needs a server, so it is not run.
func Example() {
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, "postgres://app@db:5432/app", pgdb.Config{MaxConns: 16})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close() // after the transport: the pool is the application's
	tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema("stead"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tr.Close()

	for ctx.Err() == nil {
		l, err := tr.Claim(ctx, "worker-1", 30*time.Second, 0)
		if err != nil {
			fmt.Println(err) // stead.ErrUnavailable: back off and retry
			continue
		}
		if l == nil {
			_ = tr.Wait(ctx)
			continue
		}
		fmt.Println(l.Group, l.Event.Kind)
		if err := tr.Ack(ctx, l); err != nil {
			fmt.Println(err)
		}
	}
}

// A worker step in one transaction: claim, do the step's own writes (for example
// pgstore.Backend.CommitBatchTx on the same pool), publish what it emitted, ack, commit. If anything
// fails the transaction rolls back and the messages are claimable again at once.
func Example_sharedTransaction() {
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, "postgres://app@db:5432/app", pgdb.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema("stead"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tr.Close()
	b := tr.Backend().(*pgtransport.Backend)

	for ctx.Err() == nil {
		var claimed int
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			leases, err := b.ClaimBatchTx(ctx, tx, "worker-1", 30*time.Second, 0, 100)
			if err != nil || len(leases) == 0 {
				return err
			}
			claimed = len(leases)
			// ... load, step and commit the executions with the store, in tx ...
			// ... b.PublishBatchTx(ctx, tx, emitted) ...
			return b.AckBatchTx(ctx, tx, leases)
		})
		if err != nil {
			fmt.Println(err) // stead.ErrConflict: retry; stead.ErrUnavailable: back off
			continue
		}
		if claimed == 0 {
			_ = tr.Wait(ctx)
		}
	}
}

// One message's step with its writes in one round trip: the store's commit and the transport's
// ack are queued on a pgx.Batch inside the transaction that claimed the message, and the
// transaction commits only if the step won its compare-and-swap. A lost one rolls everything
// back, which hands the message back at once.
func Example_pipelinedStep() {
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, "postgres://app@db:5432/app", pgdb.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	store, err := pgstore.New(ctx, pool, pgstore.WithSchema("stead"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema("stead"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tr.Close()
	b := tr.Backend().(*pgtransport.Backend)
	sb := store.Backend().(*pgstore.Backend)

	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		leases, err := b.ClaimBatchTx(ctx, tx, "worker-1", 30*time.Second, 0, 1)
		if err != nil || len(leases) == 0 {
			return err
		}
		l := leases[0]
		loaded, err := sb.LoadForEventsTx(ctx, tx, []stead.EventRef{{ExecutionID: l.Group, EventID: l.Event.ID}})
		if err != nil || loaded[0].Execution == nil || loaded[0].Processed {
			return err // (a real worker acks a message it must drop)
		}
		next := loaded[0].Execution.Clone()
		// ... step next with the engine ...
		q := &pgx.Batch{}
		var res stead.CommitResult
		if err := sb.QueueCommit(q, next, stead.Bundle{ProcessedEventID: l.Event.ID}, &res); err != nil {
			return err
		}
		if err := b.QueueAck(q, leases); err != nil {
			return err
		}
		if err := tx.SendBatch(ctx, q).Close(); err != nil {
			return err
		}
		return res.Err // a *stead.ConflictError rolls the transaction back
	})
	if err != nil {
		fmt.Println(err)
	}
}
