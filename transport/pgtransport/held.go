package pgtransport

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/transport"
)

// ClaimHeldTx claims like ClaimBatchTx, inside the caller's transaction, but writes no lease: the
// transaction's lock on each group row is the only hold, and it ends with the transaction. That
// saves a row version per message when the caller acks or nacks every claimed message in the same
// transaction — a runtime that runs claim, step and ack as one transaction (worker/pgtx) — and is
// wrong for anything else: a held group that was neither acked nor nacked is free again the moment
// the transaction commits, not after the visibility a lease would give it.
//
// The leases it returns must be acked and nacked with AckHeldTx and NackHeldTx (or their Queue
// forms) in the same transaction, which do without the token fence that the row lock makes
// redundant; AckBatchTx and NackTx would change nothing, as no token holds the group. held names the
// groups this transaction holds from earlier held claims, which a claim must not return again
// (PostgreSQL's SKIP LOCKED does not skip the transaction's own locks). Their Until is when a
// lease of visibility would have ended: the caller's bound on the transaction, not the server's.
func (b *Backend) ClaimHeldTx(ctx context.Context, tx pgx.Tx, worker string, visibility time.Duration, minPriority, max int, held []string) ([]transport.Lease, error) {
	if b.closed.Load() {
		return nil, errClosed
	}
	if err := transport.CheckClaim(worker, visibility, minPriority, max); err != nil {
		return nil, err
	}
	if err := checkGroups(held); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	gen := b.sig.Gen()
	now := b.now()
	token := transport.NewToken(worker)
	after := b.cursor.from()
	if held == nil {
		held = []string{}
	}
	rows, err := tx.Query(ctx, b.sql.claimHeld, now, minPriority, max, after.key, after.group, held)
	if err != nil {
		return nil, fail("claim", err)
	}
	out, err := b.leases(rows, gen, token, now.Add(visibility), minPriority)
	if err != nil {
		return nil, fail("claim", err)
	}
	return out, nil
}

// checkGroups checks the group ids a held claim is told to skip.
func checkGroups(groups []string) error {
	if len(groups) > transport.MaxBatch*transport.MaxBatch {
		return check.Invalidf("%d held groups to skip, more than %d", len(groups), transport.MaxBatch*transport.MaxBatch)
	}
	for _, g := range groups {
		if err := check.ID("held group", g); err != nil {
			return err
		}
	}
	return nil
}

// AckHeldTx acks leases of ClaimHeldTx in the transaction that claimed them, with AckBatchTx's
// checks: the messages are gone, and their groups at the back of the round-robin (or deleted when
// drained), when it commits.
func (b *Backend) AckHeldTx(ctx context.Context, tx pgx.Tx, ls []transport.Lease) error {
	return b.ackTx(ctx, tx, ls, true)
}

// NackHeldTx hands back a lease of ClaimHeldTx in the transaction that claimed it, with NackTx's
// checks: at once (delay 0), or parked for delay under the lease's token, a lease written to the
// group row that outlives the transaction.
func (b *Backend) NackHeldTx(ctx context.Context, tx pgx.Tx, l *transport.Lease, delay time.Duration) error {
	return b.nackTx(ctx, tx, l, delay, true)
}

// QueueAckHeld is AckHeldTx queued on q, as QueueAck is AckBatchTx.
func (b *Backend) QueueAckHeld(q *pgx.Batch, ls []transport.Lease) error {
	return b.queueAck(q, ls, true)
}

// QueueNackHeld is NackHeldTx queued on q, as QueueNack is NackTx.
func (b *Backend) QueueNackHeld(q *pgx.Batch, l *transport.Lease, delay time.Duration) error {
	return b.queueNack(q, l, delay, true)
}

// ackHeldArgs returns the arguments of a held ack of checked leases (ackArgs without tokens).
func (b *Backend) ackHeldArgs(ls []transport.Lease) []any {
	groups := make([]string, len(ls))
	seqs := make([]int64, len(ls))
	for i := range ls {
		groups[i], seqs[i] = ls[i].Group, ls[i].Seq
	}
	return []any{groups, seqs, b.now(), ""}
}
