package transport

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Extender is what a Backend may implement to extend leases: a worker whose step runs longer
// than a third of its lease calls it as a heartbeat, so that a slow action needs no long lease
// and a worker that dies still frees its groups within one lease. It is optional; a Transport
// whose backend lacks it answers Extend with an error wrapping errors.ErrUnsupported.
type Extender interface {
	// Extend sets the end of each lease whose token still holds its group to now + visibility on
	// the backend's clock, in one write, and returns how many it extended. A stale lease (its
	// group acked, handed back or claimed again since) changes nothing and is not an error; a
	// lease that ended but whose group nobody claimed since is still held, as for Ack.
	Extend(ctx context.Context, ls []Lease, visibility time.Duration) (int, error)
}

// CanExtend reports whether t's backend extends leases (Extender).
func (t *Transport) CanExtend() bool {
	_, ok := t.b.(Extender)
	return ok
}

// Extend extends the leases ls (at most MaxBatch, each with a group and token) to now +
// visibility (at most MaxVisibility), fenced by their tokens, and returns how many were still
// held (see Extender). The caller's leases are left as they were: their Until is not updated.
func (t *Transport) Extend(ctx context.Context, ls []Lease, visibility time.Duration) (int, error) {
	x, ok := t.b.(Extender)
	if !ok {
		return 0, fmt.Errorf("transport: extend: %w", errors.ErrUnsupported)
	}
	if err := CheckExtend(ls, visibility); err != nil {
		return 0, err
	}
	if err := t.enter(ctx); err != nil {
		return 0, err
	}
	defer t.leave()
	if len(ls) == 0 {
		return 0, nil
	}
	return x.Extend(ctx, ls, visibility)
}
