package memtransport

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/errs"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/internal/wake"
)

// Option configures New.
type Option func(*backend)

// WithClock sets the clock leases and parks are measured with (default time.Now).
func WithClock(now func() time.Time) Option { return func(b *backend) { b.clock = now } }

// WithPollInterval bounds how long Wait blocks without a notification (default 1 s), so that a
// waiter re-checks even when the clock is not the wall clock.
func WithPollInterval(d time.Duration) Option { return func(b *backend) { b.poll = d } }

// backend is the in-memory transport.Backend. It is safe for concurrent use.
type backend struct {
	clock func() time.Time
	poll  time.Duration
	sig   *wake.Signal

	mu     sync.Mutex
	closed bool
	seq    int64
	groups map[string]*group
	free   [transport.MaxPriority + 1]groupHeap // by (served, id)
	leased [transport.MaxPriority + 1]groupHeap // by (until, id); parked groups too
	flow   flows
}

var (
	_ transport.Backend  = (*backend)(nil)
	_ transport.Extender = (*backend)(nil)
	_ transport.Limiter  = (*backend)(nil)
)

type group struct {
	id       string
	priority int
	msgs     []transport.Message // FIFO, head first
	token    string              // lease or park holder; "" when free
	until    time.Time           // end of the lease or park
	served   time.Time           // claim-order key while free: last ack, zero if never served
	index    int                 // position in its heap
	key      *flowKey            // the group's flow key; nil when unlimited
	admitted bool                // a keyed group is in free or leased only while admitted
}

// New returns an empty in-memory transport.
func New(opts ...Option) *transport.Transport {
	b := &backend{clock: time.Now, poll: time.Second, sig: wake.New(), groups: map[string]*group{}, flow: newFlows()}
	for _, o := range opts {
		o(b)
	}
	for p := range b.free {
		b.free[p].byServed = true
	}
	return transport.New(b)
}

// now reads the clock at the precision the SQL backends keep, so that leases end alike everywhere.
func (b *backend) now() time.Time { return b.clock().UTC().Truncate(time.Microsecond) }

// lock takes b's mutex for an operation, unless b is closed: then it returns the error and leaves
// the mutex free. On success the caller unlocks.
func (b *backend) lock() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return errClosed
	}
	return nil
}

// PublishBatch implements transport.Backend.
func (b *backend) PublishBatch(_ context.Context, msgs []transport.Outgoing) error {
	if err := b.lock(); err != nil {
		return err
	}
	defer b.mu.Unlock()
	now := b.now()
	created := false
	var keys []*flowKey
	for _, o := range msgs {
		if o.Flow.Limited() {
			b.flow.remember(o.Group, o.Flow, now)
		}
		g := b.groups[o.Group]
		if g == nil {
			g = &group{id: o.Group, priority: o.Priority, key: b.flow.keyOf(o.Group)}
			b.groups[o.Group] = g
			if g.key != nil {
				g.key.waiting = append(g.key.waiting, g)
				keys = append(keys, g.key)
			} else {
				heap.Push(&b.free[g.priority], g)
				created = true
			}
		}
		b.seq++
		ev := o.Event
		ev.Data = slices.Clone(ev.Data)
		g.msgs = append(g.msgs, transport.Message{Seq: b.seq, Group: g.id, Event: ev, Priority: g.priority})
	}
	if b.admit(keys, now) {
		created = true
	}
	if created {
		b.sig.Notify()
	}
	return nil
}

// ClaimBatch implements transport.Backend.
func (b *backend) ClaimBatch(_ context.Context, worker string, visibility time.Duration, minPriority, max int) ([]transport.Lease, error) {
	gen := b.sig.Gen()
	if err := b.lock(); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	now := b.now()
	b.admit(b.flow.due(), now)
	token := transport.NewToken(worker)
	until := now.Add(visibility)
	var out []transport.Lease
	for len(out) < max {
		g := b.next(now, minPriority)
		if g == nil {
			break
		}
		if g.token == "" {
			heap.Remove(&b.free[g.priority], g.index)
		} else {
			heap.Remove(&b.leased[g.priority], g.index)
		}
		g.token, g.until = token, until
		heap.Push(&b.leased[g.priority], g)
		m := g.msgs[0]
		m.Event.Data = slices.Clone(m.Event.Data)
		out = append(out, transport.Lease{Message: m, Token: token, Until: until})
	}
	if len(out) == 0 {
		b.sig.Empty(gen)
	}
	return out, nil
}

// next returns the claimable group that comes first in claim order: the lowest key, where a free
// group's key is when it was last served and an expired lease's key is when it ended; ties go to
// the lower id.
func (b *backend) next(now time.Time, minPriority int) *group {
	var best *group
	var bestKey time.Time
	consider := func(g *group, key time.Time) {
		if best == nil || key.Before(bestKey) || (key.Equal(bestKey) && g.id < best.id) {
			best, bestKey = g, key
		}
	}
	for p := minPriority; p <= transport.MaxPriority; p++ {
		if h := &b.free[p]; h.Len() > 0 {
			consider(h.gs[0], h.gs[0].served)
		}
		// A lease that ends exactly now still holds.
		if h := &b.leased[p]; h.Len() > 0 && h.gs[0].until.Before(now) {
			consider(h.gs[0], h.gs[0].until)
		}
	}
	return best
}

// AckBatch implements transport.Backend.
func (b *backend) AckBatch(_ context.Context, ls []transport.Lease) error {
	if err := b.lock(); err != nil {
		return err
	}
	defer b.mu.Unlock()
	now := b.now()
	freed := false
	var keys []*flowKey
	for i := range ls {
		g := b.held(&ls[i])
		if g == nil {
			continue
		}
		heap.Remove(&b.leased[g.priority], g.index)
		g.msgs[0] = transport.Message{}
		g.msgs = g.msgs[1:]
		g.token, g.until, g.served = "", time.Time{}, now
		if g.key != nil {
			// The ack ends the admission: the group gives its place back and, with messages
			// left, queues for another.
			g.admitted = false
			g.key.admitted--
			keys = append(keys, g.key)
			if len(g.msgs) > 0 {
				g.key.waiting = append(g.key.waiting, g)
			}
		}
		if len(g.msgs) == 0 {
			// The next publish creates the group afresh, with its own priority.
			delete(b.groups, g.id)
			continue
		}
		if g.key == nil {
			heap.Push(&b.free[g.priority], g)
			freed = true
		}
	}
	if b.admit(keys, now) {
		freed = true
	}
	if freed {
		b.sig.Notify()
	}
	return nil
}

// Nack implements transport.Backend.
func (b *backend) Nack(_ context.Context, l *transport.Lease, delay time.Duration) error {
	if err := b.lock(); err != nil {
		return err
	}
	defer b.mu.Unlock()
	g := b.held(l)
	if g == nil {
		return nil
	}
	if delay > 0 {
		// Parked: the token stays, so the group is held until the park ends.
		g.until = b.now().Add(delay)
		heap.Fix(&b.leased[g.priority], g.index)
		return nil
	}
	heap.Remove(&b.leased[g.priority], g.index)
	g.token, g.until, g.served = "", time.Time{}, time.Time{}
	heap.Push(&b.free[g.priority], g)
	b.sig.Notify()
	return nil
}

// Extend implements transport.Extender.
func (b *backend) Extend(_ context.Context, ls []transport.Lease, visibility time.Duration) (int, error) {
	if err := b.lock(); err != nil {
		return 0, err
	}
	defer b.mu.Unlock()
	until := b.now().Add(visibility)
	n := 0
	for i := range ls {
		if g := b.held(&ls[i]); g != nil {
			g.until = until
			heap.Fix(&b.leased[g.priority], g.index)
			n++
		}
	}
	return n, nil
}

// held returns the group l still holds, or nil when the lease is stale.
func (b *backend) held(l *transport.Lease) *group {
	g := b.groups[l.Group]
	if g == nil || g.token != l.Token {
		return nil
	}
	return g
}

// Wait implements transport.Backend. Besides publishes and acks it wakes when the earliest
// lease or park ends (on the wall clock, as measured by the injected clock now), and at the
// latest after the poll interval.
func (b *backend) Wait(ctx context.Context) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return errClosed
	}
	d := b.poll
	now := b.now()
	for p := range b.leased {
		if h := &b.leased[p]; h.Len() > 0 {
			// Heap order puts the earliest end first; ends already past were seen by the claim
			// that came before this Wait.
			for _, g := range h.gs[:1] {
				if left := g.until.Sub(now); left > 0 && left < d {
					d = left
				}
			}
		}
	}
	if due, ok := b.flow.nextDue(now); ok {
		if left := due.Sub(now); left < d {
			d = max(left, time.Microsecond)
		}
	}
	b.mu.Unlock()
	err := b.sig.Wait(ctx, d)
	if errors.Is(err, errs.Closed) {
		return errClosed
	}
	return err
}

// Close implements transport.Backend. Waiters return at once.
func (b *backend) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.sig.Close()
	return nil
}

var errClosed = fmt.Errorf("memtransport: %w", stead.ErrClosed)

// groupHeap orders free groups by (served, id) or leased groups by (until, id).
type groupHeap struct {
	gs       []*group
	byServed bool
}

func (h *groupHeap) Len() int { return len(h.gs) }
func (h *groupHeap) Less(i, j int) bool {
	a, b := h.gs[i], h.gs[j]
	ka, kb := a.until, b.until
	if h.byServed {
		ka, kb = a.served, b.served
	}
	if !ka.Equal(kb) {
		return ka.Before(kb)
	}
	return a.id < b.id
}
func (h *groupHeap) Swap(i, j int) {
	h.gs[i], h.gs[j] = h.gs[j], h.gs[i]
	h.gs[i].index, h.gs[j].index = i, j
}
func (h *groupHeap) Push(x any) {
	g := x.(*group)
	g.index = len(h.gs)
	h.gs = append(h.gs, g)
}
func (h *groupHeap) Pop() any {
	n := len(h.gs) - 1
	g := h.gs[n]
	h.gs[n] = nil
	h.gs = h.gs[:n]
	g.index = -1
	return g
}
