package transport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/steadhq/stead"
)

// Limits every backend enforces alike.
const (
	// MaxBatch is the most messages one PublishBatch, ClaimBatch or AckBatch accepts.
	MaxBatch = stead.MaxBatch
	// MaxPriority is the highest priority; 0 is the lowest.
	MaxPriority = stead.MaxPriority
	// MaxVisibility bounds a lease and a nack delay, so that a typo cannot hide a message for
	// years.
	MaxVisibility = 7 * 24 * time.Hour
)

// Message is one event waiting in its group.
type Message struct {
	// Seq orders messages: it grows with every publish and is never reused.
	Seq int64
	// Group is the execution the event is for.
	Group string
	Event stead.Event
	// Priority is the group's priority (the one given at its first publish).
	Priority int
}

// Lease is a claimed message. Token identifies this claim: Ack and Nack act only while the group
// is still held by this token, so a worker whose lease expired cannot disturb the next holder.
type Lease struct {
	Message
	Token string
	// Until is when the lease ends, on the transport's clock.
	Until time.Time
}

// Outgoing is one message of a PublishBatch.
type Outgoing struct {
	Group    string
	Event    stead.Event
	Priority int
	// Flow, when it names a key, limits the group (see Flow and Limiter). The group remembers
	// its key from the first publish that names one, so later publishes may leave it empty.
	Flow Flow
}

// Transport delivers events to groups. It checks and normalises every argument, then calls its
// Backend, so every backend refuses, stores and returns the same things; it is safe for
// concurrent use, and several processes may share one PostgreSQL or SQLite database.
//
// Errors wrap the stead sentinels: bad input is ErrInvalid (nothing written), a closed
// transport ErrClosed, an unreachable or busy backend ErrUnavailable (nothing written), a lost
// connection mid-write ErrTimeout (the write may have landed). A call whose context is already
// done returns the context's error and reaches nothing. Close waits for the calls in flight.
//
// Times in what a Transport returns are in UTC at microsecond precision, and empty event data is
// nil, whatever the backend.
type Transport struct {
	b Backend
	// mu is held for reading by every call in flight and for writing by Close, which so closes
	// the backend only once they are done; closed is written under it.
	mu     sync.RWMutex
	closed bool
	// stop is cancelled when Close begins: it ends the Waits in flight, which would otherwise
	// hold Close until something became claimable.
	stop   context.Context
	cancel context.CancelFunc
}

// New returns a Transport in front of b, which it owns: Close closes b.
func New(b Backend) *Transport {
	stop, cancel := context.WithCancel(context.Background())
	return &Transport{b: b, stop: stop, cancel: cancel}
}

// enter admits a call: it refuses one on a closed transport or with a context that is already
// done, so that no backend has to. A nil error holds t.mu for reading: the caller defers
// t.leave. A method that enters must not call another that does (a waiting Close would
// deadlock the second RLock).
func (t *Transport) enter(ctx context.Context) error {
	t.mu.RLock()
	if t.closed {
		t.mu.RUnlock()
		return errClosed
	}
	if err := ctx.Err(); err != nil {
		t.mu.RUnlock()
		return err
	}
	return nil
}

func (t *Transport) leave() { t.mu.RUnlock() }

// Backend returns the backend behind t, for backend-specific features reached by a type
// assertion (pgtransport's methods that run inside the caller's transaction). Calls made on it
// directly skip t's checks unless the backend runs them itself.
func (t *Transport) Backend() Backend { return t.b }

var errClosed = fmt.Errorf("transport: %w", stead.ErrClosed)

// Publish appends ev to the group's queue. The priority (0..MaxPriority) is taken only by the
// group's first publish: it sticks until the group's last message is acked. The event's
// CreatedAt is stored in UTC at microsecond precision; a time outside the years 1 to 9999 (once in
// UTC) is refused.
func (t *Transport) Publish(ctx context.Context, group string, ev stead.Event, priority int) error {
	return t.PublishBatch(ctx, []Outgoing{{Group: group, Event: ev, Priority: priority}})
}

// PublishBatch publishes every message (at most MaxBatch) in one write, all or nothing. Messages
// of one group keep their order in the slice.
func (t *Transport) PublishBatch(ctx context.Context, msgs []Outgoing) error {
	prepared, err := PreparePublish(msgs)
	if err != nil {
		return err
	}
	if !t.CanLimit() {
		for i := range prepared {
			if prepared[i].Flow.Limited() {
				return fmt.Errorf("transport: message %d names flow key %q: %w", i, prepared[i].Flow.Key, errors.ErrUnsupported)
			}
		}
	}
	if err := t.enter(ctx); err != nil {
		return err
	}
	defer t.leave()
	if len(prepared) == 0 {
		return nil
	}
	return t.b.PublishBatch(ctx, prepared)
}

// Claim leases the head message of a group that has nothing in flight and a priority of at
// least minPriority, for visibility (at most MaxVisibility). Groups are served round-robin: the
// group waiting longest since it was last served comes first, whatever its priority (priority
// filters, it does not order). A backend may trade strictness for speed by a bounded amount,
// which it documents: groups that join the round-robin while others wait (new, handed back, their
// lease or park over, their claim rolled back) may be served later than that order, by a number
// of claims that grows with how many join together (pgtransport: at most 64 claims of any one
// process per such group, so k of them within 64·k). A lease ending exactly now still holds. It
// returns nil, nil when nothing is claimable.
func (t *Transport) Claim(ctx context.Context, worker string, visibility time.Duration, minPriority int) (*Lease, error) {
	ls, err := t.ClaimBatch(ctx, worker, visibility, minPriority, 1)
	if err != nil || len(ls) == 0 {
		return nil, err
	}
	return &ls[0], nil
}

// ClaimBatch is Claim for up to max messages (1..MaxBatch) at once, at most one per group. It
// returns an empty slice when nothing is claimable.
func (t *Transport) ClaimBatch(ctx context.Context, worker string, visibility time.Duration, minPriority, max int) ([]Lease, error) {
	if err := CheckClaim(worker, visibility, minPriority, max); err != nil {
		return nil, err
	}
	if err := t.enter(ctx); err != nil {
		return nil, err
	}
	defer t.leave()
	ls, err := t.b.ClaimBatch(ctx, worker, visibility, minPriority, max)
	if err != nil {
		return nil, err
	}
	if ls == nil {
		ls = []Lease{}
	}
	for i := range ls {
		normalise(&ls[i])
	}
	return ls, nil
}

// Ack removes the leased message and frees its group; the group goes behind the groups that are
// waiting. A lease that ended still acks if no one claimed the group since; one whose group was
// claimed again (stale) changes nothing and is not an error.
func (t *Transport) Ack(ctx context.Context, l *Lease) error {
	if err := checkLease(l); err != nil {
		return err
	}
	return t.AckBatch(ctx, []Lease{*l})
}

// AckBatch acks many leases (at most MaxBatch) in one write.
func (t *Transport) AckBatch(ctx context.Context, ls []Lease) error {
	if err := CheckAck(ls); err != nil {
		return err
	}
	if err := t.enter(ctx); err != nil {
		return err
	}
	defer t.leave()
	if len(ls) == 0 {
		return nil
	}
	return t.b.AckBatch(ctx, ls)
}

// Nack returns the message to the head of its group. With delay 0 it is claimable again at once;
// with a positive delay (at most MaxVisibility) the group is parked (nothing of it is claimable)
// until the delay has passed. A stale lease changes nothing and is not an error.
func (t *Transport) Nack(ctx context.Context, l *Lease, delay time.Duration) error {
	if err := CheckNack(l, delay); err != nil {
		return err
	}
	if err := t.enter(ctx); err != nil {
		return err
	}
	defer t.leave()
	return t.b.Nack(ctx, l, delay)
}

// Wait blocks until something may have become claimable (a publish, an ack or nack that frees a
// group with messages, a lease or park ending) or ctx is done, when it returns ctx's error. It may
// return early: callers claim, and wait again when nothing came. Close ends it with an error
// wrapping ErrClosed.
func (t *Transport) Wait(ctx context.Context) error {
	if err := t.enter(ctx); err != nil {
		return err
	}
	defer t.leave()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(t.stop, cancel)()
	err := t.b.Wait(ctx)
	if t.stop.Err() != nil {
		return errClosed
	}
	return err
}

// Close ends the Waits in flight, waits for the other calls in flight to return, and closes the
// backend, once. Calls after Close return an error wrapping ErrClosed without reaching the
// backend; a second Close returns nil.
func (t *Transport) Close() error {
	t.cancel()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	return t.b.Close()
}
