package pgtransport

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/transport"
)

// ClaimHeldGroupsTx claims inside the caller's transaction without writing a lease; it exists for
// worker/pgtx. The transaction's lock on each group row is the only hold, and it ends with the
// transaction. That saves a row version per message when the caller acks or
// nacks every claimed message in the same transaction, and is wrong for anything else: a held
// group that was neither acked nor nacked is free again the moment the transaction commits, not
// after the visibility a lease would give it. The leases' Until is when a lease of visibility
// would have ended: the caller's bound on the transaction, not the server's.
//
// It takes up to depth (1..MaxBatch) consecutive messages of each group it locks, from the
// group's head, and up to max in all: a worker applies a group's queued events in order and
// commits them once. It locks as many groups at a time as the batch still lacks messages divided
// by depth (rounded up), until the batch is full or nothing more is claimable; every group it
// locks gives at least its head. The leases of one group are consecutive, oldest first, and the
// groups come in the order of their heads. held names the groups this transaction holds from
// earlier held claims, each once, which a claim must not return again (PostgreSQL's SKIP LOCKED
// does not skip the transaction's own locks).
//
// Ack a prefix of a group's leases with QueueAckHeld (in one call: the group is then freed or
// deleted once), and nack the first lease it leaves, if any, with QueueNackHeld: the group goes
// back to the front (delay 0) or is parked, its remaining messages still queued in order. Both
// do without the token fence that the row lock makes redundant; queueFencedAck and queueFencedNack would
// change nothing, as no token holds the group. Leases neither acked nor nacked stay queued, in
// order, and their group is free when the transaction ends. A message published into a held
// group meanwhile never comes back ahead of one published before it (see
// transport_claim_held_groups).
func (b *Backend) ClaimHeldGroupsTx(ctx context.Context, tx pgx.Tx, worker string, visibility time.Duration, minPriority, max, depth int, held []string) ([]transport.Lease, error) {
	c, err := b.HeldClaim(worker, visibility, minPriority, max, depth, held)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, c.SQL, c.Args...)
	if err != nil {
		return nil, fail("claim", err)
	}
	return c.Leases(rows)
}

// HeldClaim is the claim of ClaimHeldGroupsTx as a statement the caller sends itself, inside its
// transaction; it exists for worker/pgtx, which sends the claim inside a statement of its own
// followed by the load of what it claims, in one round trip. Everything ClaimHeldGroupsTx says of
// the claim and its leases holds.
type HeldClaim struct {
	// SQL selects the claimed messages, one row each: r_group (text), r_priority (int), r_seq
	// (bigint), r_event (text: the event's JSON) and r_key (timestamptz), in no useful order. A
	// statement around it (a WITH of it) that returns those columns in that order may be sent
	// instead, as long as it returns every row.
	SQL  string
	Args []any

	b           *Backend
	gen         uint64
	token       string
	until       time.Time
	minPriority int
	deep        bool
}

// HeldClaim checks a held claim's arguments as ClaimHeldGroupsTx does and returns its statement;
// nothing is sent.
func (b *Backend) HeldClaim(worker string, visibility time.Duration, minPriority, max, depth int, held []string) (*HeldClaim, error) {
	if b.closed.Load() {
		return nil, errClosed
	}
	if err := transport.CheckClaim(worker, visibility, minPriority, max); err != nil {
		return nil, err
	}
	if depth < 1 || depth > transport.MaxBatch {
		return nil, check.Invalidf("claim of %d messages per group outside 1..%d", depth, transport.MaxBatch)
	}
	if err := checkGroups(held); err != nil {
		return nil, err
	}
	now := b.now()
	c := &HeldClaim{
		b: b, gen: b.sig.Gen(), token: transport.NewToken(worker), until: now.Add(visibility),
		minPriority: minPriority,
		// A claim of one message per group, or of one message in all, takes the shallow
		// statement: the deeper claim's second read would cost a statement for nothing (about
		// 110 µs of server CPU a claim, measured unbatched).
		deep: depth > 1 && max > 1,
	}
	after := b.cursor.from()
	if held == nil {
		held = []string{}
	}
	if c.deep {
		c.SQL, c.Args = b.st.ClaimHeldGroups, []any{now, minPriority, max, depth, after.key, after.group, held}
	} else {
		c.SQL, c.Args = b.st.ClaimHeld, []any{now, minPriority, max, after.key, after.group, held}
	}
	return c, nil
}

// Leases reads the rows of the claim's statement and closes them: the leases, each group's
// consecutive and oldest first, the groups in the order of their heads.
func (c *HeldClaim) Leases(rows pgx.Rows) ([]transport.Lease, error) {
	out, err := c.b.leases(rows, c.gen, c.token, c.until, c.minPriority)
	if err != nil {
		return nil, fail("claim", err)
	}
	if c.deep {
		groupLeases(out)
	}
	return out, nil
}

// groupLeases orders leases sorted by seq so that each group's are consecutive, the groups in the
// order of their first (oldest) lease.
func groupLeases(ls []transport.Lease) {
	first := make(map[string]int64, len(ls))
	for _, l := range ls {
		if _, ok := first[l.Group]; !ok {
			first[l.Group] = l.Seq
		}
	}
	slices.SortFunc(ls, func(x, y transport.Lease) int {
		return cmp.Or(cmp.Compare(first[x.Group], first[y.Group]), cmp.Compare(x.Seq, y.Seq))
	})
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

// QueueAckHeld queues an ack of leases of ClaimHeldGroupsTx on q, to be sent in the transaction
// that claimed them, with AckBatch's checks; it exists for worker/pgtx. The messages are gone,
// and their groups at the back of the round-robin (or deleted when drained), when it commits.
// Several leases of one group, a prefix of what the claim took of it, free or delete the group
// once.
func (b *Backend) QueueAckHeld(q *pgx.Batch, ls []transport.Lease) error {
	return b.queueAck(q, ls, true)
}

// QueueNackHeld queues the hand-back of a lease of ClaimHeldGroupsTx on q, to be sent in the
// transaction that claimed it, with Nack's checks; it exists for worker/pgtx. The group goes back
// at once (delay 0, at the front of the round-robin), or is parked for delay under the lease's
// token, a lease written to the group row that outlives the transaction. It hands back the group:
// the lease's message and every later one stay queued in order, whether or not earlier leases of
// the group were acked before it.
func (b *Backend) QueueNackHeld(q *pgx.Batch, l *transport.Lease, delay time.Duration) error {
	return b.queueNack(q, l, delay, true)
}

// ackHeldStatement returns the statement and arguments of a held ack of checked leases (ackArgs
// without tokens). Leases of distinct groups go to transport_ack_held as they
// are. Several of one group go to transport_ack_held_groups, which deletes all but the last of each
// group and hands the last ones to transport_ack_held: given a group several times, that would
// free it once but probe for messages left past each of its acked seqs, and add a statement to
// tell the freed groups from the rest.
func (b *Backend) ackHeldStatement(ls []transport.Lease) (string, []any) {
	if !repeatsGroup(ls) {
		groups := make([]string, len(ls))
		seqs := make([]int64, len(ls))
		for i := range ls {
			groups[i], seqs[i] = ls[i].Group, ls[i].Seq
		}
		return b.st.AckHeld, []any{groups, seqs, b.now(), ""}
	}
	last := make(map[string]int, len(ls)) // group -> index in ls of its lease with the highest seq
	var order []string                    // the groups, each once, in the order of ls
	for i := range ls {
		j, ok := last[ls[i].Group]
		switch {
		case !ok:
			last[ls[i].Group] = i
			order = append(order, ls[i].Group)
		case ls[i].Seq > ls[j].Seq:
			last[ls[i].Group] = i
		}
	}
	groups := make([]string, 0, len(ls)-len(order))
	seqs := make([]int64, 0, len(ls)-len(order))
	for i := range ls {
		if last[ls[i].Group] != i {
			groups, seqs = append(groups, ls[i].Group), append(seqs, ls[i].Seq)
		}
	}
	lastSeqs := make([]int64, len(order))
	for i, g := range order {
		lastSeqs[i] = ls[last[g]].Seq
	}
	return b.st.AckHeldGroups, []any{groups, seqs, order, lastSeqs, b.now(), ""}
}

// repeatsGroup reports whether two leases are of one group, without allocating for the small
// batches of every ordinary ack.
func repeatsGroup(ls []transport.Lease) bool {
	if len(ls) <= 32 {
		for i := range ls {
			for j := range i {
				if ls[i].Group == ls[j].Group {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[string]struct{}, len(ls))
	for i := range ls {
		if _, ok := seen[ls[i].Group]; ok {
			return true
		}
		seen[ls[i].Group] = struct{}{}
	}
	return false
}
