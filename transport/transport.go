package transport

import (
	"context"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
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
}

// Transport delivers events to groups. Implementations are safe for concurrent use; several
// processes may share one PostgreSQL or SQLite database.
//
// Errors wrap the stead sentinels: bad input is ErrInvalid (nothing written), a closed
// transport ErrClosed, an unreachable or busy backend ErrUnavailable (nothing written), a lost
// connection mid-write ErrTimeout (the write may have landed).
type Transport interface {
	// Publish appends ev to the group's queue. The priority (0..MaxPriority) is taken only by
	// the group's first publish: it sticks until the group's last message is acked.
	Publish(ctx context.Context, group string, ev stead.Event, priority int) error
	// PublishBatch publishes every message in one write, all or nothing. Messages of one group
	// keep their order in the slice.
	PublishBatch(ctx context.Context, msgs []Outgoing) error
	// Claim leases the head message of a group that has nothing in flight and a priority of at
	// least minPriority, for visibility. Groups are served round-robin: the group waiting
	// longest since it was last served comes first, whatever its priority (priority filters,
	// it does not order). A backend may trade strictness for speed by a bounded amount: a group
	// that joins the round-robin while others wait (new, handed back, its lease or park over) may
	// be served a bounded number of claims late (pgtransport: within 64 claims of each process).
	// A lease ending exactly now still holds. It returns nil, nil when nothing is claimable.
	Claim(ctx context.Context, worker string, visibility time.Duration, minPriority int) (*Lease, error)
	// ClaimBatch is Claim for up to max messages (1..MaxBatch) at once, at most one per group.
	// It returns an empty slice when nothing is claimable.
	ClaimBatch(ctx context.Context, worker string, visibility time.Duration, minPriority, max int) ([]Lease, error)
	// Ack removes the leased message and frees its group; the group goes behind the groups
	// that are waiting. A lease that ended still acks if no one claimed the group since; one
	// whose group was claimed again (stale) changes nothing and is not an error.
	Ack(ctx context.Context, l *Lease) error
	// AckBatch acks many leases in one write.
	AckBatch(ctx context.Context, ls []Lease) error
	// Nack returns the message to the head of its group. With delay 0 it is claimable again at
	// once; with a positive delay the group is parked (nothing of it is claimable) until the
	// delay has passed. A stale lease changes nothing and is not an error.
	Nack(ctx context.Context, l *Lease, delay time.Duration) error
	// Wait blocks until something may have become claimable (a publish, an ack or nack that
	// frees a group with messages, a lease or park ending) or ctx is done, when it returns
	// ctx's error. It may return early: callers claim, and wait again when nothing came.
	Wait(ctx context.Context) error
	// Close releases the transport. Calls after Close return an error wrapping ErrClosed.
	Close() error
}

// Validate checks a message before it is published.
func (o *Outgoing) Validate() error {
	if err := check.ID("group", o.Group); err != nil {
		return err
	}
	if err := o.Event.Validate(); err != nil {
		return err
	}
	if o.Priority < 0 || o.Priority > MaxPriority {
		return check.Invalidf("priority %d outside 0..%d", o.Priority, MaxPriority)
	}
	return nil
}

// ValidateBatch checks a PublishBatch.
func ValidateBatch(msgs []Outgoing) error {
	if len(msgs) > MaxBatch {
		return check.Invalidf("batch of %d messages, more than %d", len(msgs), MaxBatch)
	}
	for i := range msgs {
		if err := msgs[i].Validate(); err != nil {
			return fmtIndex(i, err)
		}
	}
	return nil
}

// ValidateClaim checks the arguments of Claim and ClaimBatch (max 1 for Claim).
func ValidateClaim(worker string, visibility time.Duration, minPriority, max int) error {
	if err := check.ID("worker", worker); err != nil {
		return err
	}
	if visibility <= 0 || visibility > MaxVisibility {
		return check.Invalidf("visibility %v outside (0, %v]", visibility, MaxVisibility)
	}
	if minPriority < 0 || minPriority > MaxPriority {
		return check.Invalidf("minimum priority %d outside 0..%d", minPriority, MaxPriority)
	}
	if max < 1 || max > MaxBatch {
		return check.Invalidf("claim of %d messages outside 1..%d", max, MaxBatch)
	}
	return nil
}

// ValidateLease checks a lease given to Ack or Nack.
func ValidateLease(l *Lease) error {
	if l == nil {
		return check.Invalidf("lease is nil")
	}
	if err := check.ID("lease group", l.Group); err != nil {
		return err
	}
	return check.ID("lease token", l.Token)
}

// ValidateLeases checks an AckBatch.
func ValidateLeases(ls []Lease) error {
	if len(ls) > MaxBatch {
		return check.Invalidf("batch of %d leases, more than %d", len(ls), MaxBatch)
	}
	for i := range ls {
		if err := ValidateLease(&ls[i]); err != nil {
			return fmtIndex(i, err)
		}
	}
	return nil
}

// ValidateDelay checks a Nack delay.
func ValidateDelay(d time.Duration) error {
	if d < 0 || d > MaxVisibility {
		return check.Invalidf("nack delay %v outside [0, %v]", d, MaxVisibility)
	}
	return nil
}

// FirstLease turns the result of a ClaimBatch of max 1 into that of Claim: the one lease, or
// nil when nothing was claimable or err is not nil. It lets a backend write Claim as
//
//	return transport.FirstLease(t.ClaimBatch(ctx, worker, visibility, minPriority, 1))
func FirstLease(ls []Lease, err error) (*Lease, error) {
	if err != nil || len(ls) == 0 {
		return nil, err
	}
	return &ls[0], nil
}
