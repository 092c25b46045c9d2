// Package wake is the in-process wake-up signal the transports share: a broadcast that every
// waiter sees, plus a generation count that closes the gap between a claim that found nothing
// and the Wait that follows it.
package wake

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/steadhq/stead/internal/errs"
)

// Signal is a broadcast: Notify wakes every goroutine blocked in Wait. The zero value is not
// usable; call New.
type Signal struct {
	mu     sync.Mutex
	ch     chan struct{} // closed and replaced by Notify
	gen    uint64        // Notify count
	closed bool
	// empty is the generation seen at the start of the latest claim that found nothing. A Wait
	// that finds gen moved past it returns at once: a publish landed after that claim looked, and
	// its notification may have fired before the waiter started listening.
	empty atomic.Uint64
}

// New returns a ready Signal.
func New() *Signal { return &Signal{ch: make(chan struct{})} }

// Notify wakes every waiter.
func (s *Signal) Notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.gen++
	close(s.ch)
	s.ch = make(chan struct{})
}

// Gen returns the current generation; a claim reads it before it looks.
func (s *Signal) Gen() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// Empty records that a claim which began at generation g found nothing.
func (s *Signal) Empty(g uint64) { s.empty.Store(g) }

// Close wakes every waiter for good: Wait returns an error wrapping errs.Closed from now on.
func (s *Signal) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
}

// Wait blocks until Notify, Close, ctx is done, or max has passed (max <= 0: no bound). It
// returns nil on a notification or the bound, ctx.Err() when ctx is done, and an error wrapping
// errs.Closed after Close.
func (s *Signal) Wait(ctx context.Context, max time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	ch, gen, closed := s.ch, s.gen, s.closed
	s.mu.Unlock()
	if closed {
		return errs.Closed
	}
	if s.empty.Load() != gen {
		// Consume the missed notification so that a caller which waits again without claiming
		// does not spin.
		s.empty.Store(gen)
		return nil
	}
	var timeout <-chan time.Time
	if max > 0 {
		t := time.NewTimer(max)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ch:
		s.mu.Lock()
		closed = s.closed
		s.mu.Unlock()
		if closed {
			return errs.Closed
		}
		return nil
	case <-timeout:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
