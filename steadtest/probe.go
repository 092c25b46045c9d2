package steadtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// probe is a transport backend in front of the memory transport that knows when the kit's
// worker has nothing left to do. Every call that can make work claimable goes through it, so
// "settled" is exact rather than guessed from a sleep: the last claim found nothing, nothing
// changed since it started, and no claimed message is still being handled.
type probe struct {
	inner transport.Backend
	clock func() time.Time

	mu       sync.Mutex
	gen      uint64 // bumped by every publish, nack, ack and clock move
	quiet    uint64 // gen+1 of the last claim that found nothing; 0: none yet
	inflight int
	changed  chan struct{} // closed and replaced whenever gen or quiet changes
	parks    []park        // messages handed back with a delay, for the kit to step the clock to
	closed   bool
}

// park is a message nacked with a delay: claimable again at due.
type park struct {
	group string
	due   time.Time
}

func newProbe(inner transport.Backend, clock func() time.Time) *probe {
	return &probe{inner: inner, clock: clock, changed: make(chan struct{})}
}

// bump records a change; the caller holds mu.
func (p *probe) bump() {
	p.gen++
	close(p.changed)
	p.changed = make(chan struct{})
}

// touch records a change made outside the transport (the clock moved).
func (p *probe) touch() {
	p.mu.Lock()
	p.bump()
	p.mu.Unlock()
}

// settled reports whether the worker is idle, and a channel closed at the next change.
func (p *probe) settled() (bool, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inflight == 0 && p.quiet == p.gen+1, p.changed
}

// nextPark returns the earliest park due after now and at or before limit, skipping the groups
// skip says to (suspended executions, whose parks would otherwise stop the clock every recheck).
// Parks already due are forgotten: a settled worker has claimed them again.
func (p *probe) nextPark(now, limit time.Time, skip func(group string) bool) (time.Time, bool) {
	p.mu.Lock()
	kept := p.parks[:0]
	for _, pk := range p.parks {
		if pk.due.After(now) {
			kept = append(kept, pk)
		}
	}
	p.parks = kept
	cands := append([]park(nil), kept...)
	p.mu.Unlock()
	var best time.Time
	found := false
	for _, pk := range cands {
		if pk.due.After(limit) || (found && !pk.due.Before(best)) || skip(pk.group) {
			continue
		}
		best, found = pk.due, true
	}
	return best, found
}

func (p *probe) PublishBatch(ctx context.Context, msgs []transport.Outgoing) error {
	err := p.inner.PublishBatch(ctx, msgs)
	p.touch()
	return err
}

func (p *probe) ClaimBatch(ctx context.Context, worker string, visibility time.Duration, minPriority, max int) ([]transport.Lease, error) {
	p.mu.Lock()
	start := p.gen
	p.mu.Unlock()
	ls, err := p.inner.ClaimBatch(ctx, worker, visibility, minPriority, max)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inflight += len(ls)
	if err == nil && len(ls) == 0 && p.inflight == 0 && p.gen == start {
		p.quiet = start + 1
		close(p.changed)
		p.changed = make(chan struct{})
	}
	return ls, err
}

func (p *probe) AckBatch(ctx context.Context, ls []transport.Lease) error {
	err := p.inner.AckBatch(ctx, ls)
	p.mu.Lock()
	if err == nil {
		p.inflight -= len(ls)
	}
	p.bump()
	p.mu.Unlock()
	return err
}

func (p *probe) Nack(ctx context.Context, l *transport.Lease, delay time.Duration) error {
	err := p.inner.Nack(ctx, l, delay)
	p.mu.Lock()
	if err == nil {
		p.inflight--
		if delay > 0 {
			// A transport lease that ends exactly now still holds: the message is claimable
			// from the next microsecond, the clock's grain.
			due := p.clock().Add(delay).Truncate(time.Microsecond).Add(time.Microsecond)
			p.parks = append(p.parks, park{group: l.Group, due: due})
		}
	}
	p.bump()
	p.mu.Unlock()
	return err
}

// Wait returns at once when anything changed since the last claim that found nothing, and
// otherwise blocks until something does: the kit's worker never sleeps through a step of the
// virtual clock, and never spins while there is nothing to do.
func (p *probe) Wait(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return fmt.Errorf("steadtest: transport: %w", stead.ErrClosed)
	}
	if p.quiet != p.gen+1 {
		p.mu.Unlock()
		return nil
	}
	ch := p.changed
	p.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *probe) Close() error {
	p.mu.Lock()
	p.closed = true
	p.bump()
	p.mu.Unlock()
	return p.inner.Close()
}
