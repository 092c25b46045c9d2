package transport

import (
	"fmt"
	"time"

	"github.com/steadhq/stead/internal/check"
)

// The checks below are what Transport runs before it calls its Backend. They are exported for a
// backend's own entry points that bypass the Transport (pgtransport's methods that run inside the
// caller's transaction), so that those refuse exactly what the Transport refuses.

// PreparePublish checks the messages of a PublishBatch (at most MaxBatch, each to a valid group
// with a valid event, a priority in 0..MaxPriority and a valid Flow) and returns them as a backend stores them:
// each event's CreatedAt in UTC at microsecond precision (zero stays zero; outside the years 1 to
// 9999 once in UTC is refused) and empty Data as nil. msgs is left as it was. An error wraps
// stead.ErrInvalid.
func PreparePublish(msgs []Outgoing) ([]Outgoing, error) {
	if len(msgs) > MaxBatch {
		return nil, check.Invalidf("batch of %d messages, more than %d", len(msgs), MaxBatch)
	}
	out := make([]Outgoing, len(msgs))
	for i, m := range msgs {
		if err := checkOutgoing(&m); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		out[i] = m
	}
	return out, nil
}

// checkOutgoing checks o and normalises it in place.
func checkOutgoing(o *Outgoing) error {
	if err := check.ID("group", o.Group); err != nil {
		return err
	}
	if err := o.Event.Validate(); err != nil {
		return err
	}
	at, err := check.Time("event created_at", o.Event.CreatedAt)
	if err != nil {
		return err
	}
	o.Event.CreatedAt = at
	if len(o.Event.Data) == 0 {
		o.Event.Data = nil
	}
	if o.Priority < 0 || o.Priority > MaxPriority {
		return check.Invalidf("priority %d outside 0..%d", o.Priority, MaxPriority)
	}
	return CheckFlow(o.Flow)
}

// CheckClaim checks the arguments of a ClaimBatch (max is 1 for a Claim): a valid worker name, a
// visibility in (0, MaxVisibility], a minimum priority in 0..MaxPriority and max in 1..MaxBatch.
// An error wraps stead.ErrInvalid.
func CheckClaim(worker string, visibility time.Duration, minPriority, max int) error {
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

// CheckAck checks the leases of an AckBatch: at most MaxBatch, each with a valid group and token.
// An error wraps stead.ErrInvalid.
func CheckAck(ls []Lease) error {
	if len(ls) > MaxBatch {
		return check.Invalidf("batch of %d leases, more than %d", len(ls), MaxBatch)
	}
	for i := range ls {
		if err := checkLease(&ls[i]); err != nil {
			return fmt.Errorf("lease %d: %w", i, err)
		}
	}
	return nil
}

// CheckNack checks the arguments of a Nack: a lease with a valid group and token, and a delay in
// [0, MaxVisibility]. An error wraps stead.ErrInvalid.
func CheckNack(l *Lease, delay time.Duration) error {
	if err := checkLease(l); err != nil {
		return err
	}
	if delay < 0 || delay > MaxVisibility {
		return check.Invalidf("nack delay %v outside [0, %v]", delay, MaxVisibility)
	}
	return nil
}

// CheckExtend checks the arguments of an Extend: at most MaxBatch leases, each with a valid group
// and token, and a visibility in (0, MaxVisibility]. An error wraps stead.ErrInvalid.
func CheckExtend(ls []Lease, visibility time.Duration) error {
	if err := CheckAck(ls); err != nil {
		return err
	}
	if visibility <= 0 || visibility > MaxVisibility {
		return check.Invalidf("visibility %v outside (0, %v]", visibility, MaxVisibility)
	}
	return nil
}

func checkLease(l *Lease) error {
	if l == nil {
		return check.Invalidf("lease is nil")
	}
	if err := check.ID("lease group", l.Group); err != nil {
		return err
	}
	return check.ID("lease token", l.Token)
}

// normalise puts a lease a backend returned in the form every backend returns: times in UTC at
// microsecond precision, empty event data as nil.
func normalise(l *Lease) {
	l.Until = micros(l.Until)
	l.Event.CreatedAt = micros(l.Event.CreatedAt)
	if len(l.Event.Data) == 0 {
		l.Event.Data = nil
	}
}

// micros is t in UTC at microsecond precision; the zero time stays zero.
func micros(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}
