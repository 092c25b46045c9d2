package pgtransport

import (
	"sync"

	"github.com/jackc/pgx/v5/pgtype"
)

// rescanEvery is how often a claim ignores the cursor and walks the round-robin from its head.
const rescanEvery = 64

// place is a group's place in the round-robin: when it was last served (-infinity: never, or
// handed back) and its id, the key of the transport_groups_claim_order index.
type place struct {
	key   pgtype.Timestamptz
	group pgtype.Text // not Valid: no place (a claim from the head)
}

// after reports whether p comes after q in the round-robin (any place comes after none).
func (p place) after(q place) bool {
	switch {
	case !q.group.Valid:
		return p.group.Valid
	case !p.group.Valid:
		return false
	}
	if c := compareKeys(p.key, q.key); c != 0 {
		return c > 0
	}
	return p.group.String > q.group.String
}

func compareKeys(a, b pgtype.Timestamptz) int {
	rank := func(t pgtype.Timestamptz) int { return int(t.InfinityModifier) } // -1, 0, 1
	if ra, rb := rank(a), rank(b); ra != rb || ra != 0 {
		return ra - rb
	}
	return a.Time.Compare(b.Time)
}

// cursor is where this transport's claimers resume the round-robin: the place of the group a
// claim of this process took last. Claims look after it first, so they skip the dead index
// entries every ack leaves in front of the live ones. One claim in rescanEvery starts from the
// head instead, to pick up the groups behind the cursor (new ones, and those handed back by a
// nack, a lease or park that ran out, a claim whose transaction rolled back), at least one per
// such claim: k of them are served within k·rescanEvery claims of this process. The function
// itself starts from the head whenever nothing is free after the cursor.
type cursor struct {
	mu     sync.Mutex
	at     place
	claims uint64
}

// from returns the place the next claim starts after (none: from the head).
func (c *cursor) from() place {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.claims++
	if c.claims%rescanEvery == 0 {
		return place{}
	}
	return c.at
}

// moveTo records the place of the last group a claim took.
func (c *cursor) moveTo(p place) {
	c.mu.Lock()
	c.at = p
	c.mu.Unlock()
}
