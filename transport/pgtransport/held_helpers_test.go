package pgtransport_test

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
)

// claimHeld, ackHeld and nackHeld drive a held claim the way worker/pgtx does: the claim of one
// message per group, and its settling queued on a pgx.Batch sent in the claiming transaction.

func claimHeld(b *pgtransport.Backend, ctx context.Context, tx pgx.Tx, worker string, visibility time.Duration, minPriority, max int, held []string) ([]transport.Lease, error) {
	return b.ClaimHeldGroupsTx(ctx, tx, worker, visibility, minPriority, max, 1, held)
}

func ackHeld(b *pgtransport.Backend, ctx context.Context, tx pgx.Tx, ls []transport.Lease) error {
	q := &pgx.Batch{}
	if err := b.QueueAckHeld(q, ls); err != nil {
		return err
	}
	return send(ctx, tx, q)
}

func nackHeld(b *pgtransport.Backend, ctx context.Context, tx pgx.Tx, l *transport.Lease, delay time.Duration) error {
	q := &pgx.Batch{}
	if err := b.QueueNackHeld(q, l, delay); err != nil {
		return err
	}
	return send(ctx, tx, q)
}

func send(ctx context.Context, tx pgx.Tx, q *pgx.Batch) error {
	if err := ctx.Err(); err != nil || q.Len() == 0 {
		return err
	}
	return tx.SendBatch(ctx, q).Close()
}
