package memstore

import (
	"slices"
	"time"
)

// queue holds the rows of a relay table (the outbox or the spawn intents) in ascending sequence
// order, with the lease each row is under. Both tables follow the same rules; only the entry type
// differs.
type queue[E any] struct {
	rows  []*leased[E]
	clone func(E) E // deep copy on the way out, so callers never alias stored entries
}

type leased[E any] struct {
	seq      int64
	e        E
	leaseEnd time.Time // claimable when not after now
}

func (q *queue[E]) push(seq int64, e E) { q.rows = append(q.rows, &leased[E]{seq: seq, e: e}) }

// pending returns up to limit entries that keep accepts, claimed or not, oldest first.
func (q *queue[E]) pending(limit int, keep func(E) bool) []E {
	var out []E
	for _, r := range q.rows {
		if len(out) == limit {
			break
		}
		if keep(r.e) {
			out = append(out, q.clone(r.e))
		}
	}
	return out
}

// claim leases up to limit entries that are not under a live lease, oldest first, until until.
func (q *queue[E]) claim(now, until time.Time, limit int) []E {
	var out []E
	for _, r := range q.rows {
		if len(out) == limit {
			break
		}
		if !r.leaseEnd.After(now) {
			r.leaseEnd = until
			out = append(out, q.clone(r.e))
		}
	}
	return out
}

// ack removes the entries whose sequence numbers are in seqs.
func (q *queue[E]) ack(seqs []int64) {
	q.rows = slices.DeleteFunc(q.rows, func(r *leased[E]) bool { return slices.Contains(seqs, r.seq) })
}

// drop removes the entries gone accepts.
func (q *queue[E]) drop(gone func(E) bool) {
	q.rows = slices.DeleteFunc(q.rows, func(r *leased[E]) bool { return gone(r.e) })
}
