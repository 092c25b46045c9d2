package transport

import (
	"context"
	"time"
)

// Backend is the storage behind a Transport: what a backend package implements, and what New
// puts the checked front type in front of. A Backend may assume that the Transport checked and
// normalised every argument (see PreparePublish, CheckClaim, CheckAck and CheckNack), that no call
// comes after Close or with a context already done, and that Close is called once. It must be
// safe for concurrent use, and may be called concurrently with Close, when its calls may fail.
// It must not keep or modify the slices and leases it is given.
//
// A Backend keeps the promises documented on Transport's methods: the order, fairness, leasing
// and fencing rules that transporttest.Run checks.
type Backend interface {
	// PublishBatch appends 1..MaxBatch messages in one write, all or nothing (Transport.PublishBatch).
	PublishBatch(ctx context.Context, msgs []Outgoing) error
	// ClaimBatch leases up to max (1..MaxBatch) messages, at most one per group
	// (Transport.ClaimBatch). Each lease has a token of its own, made with NewToken(worker), and
	// Until, when it ends on the backend's clock. It returns no lease when nothing is claimable.
	ClaimBatch(ctx context.Context, worker string, visibility time.Duration, minPriority, max int) ([]Lease, error)
	// AckBatch acks 1..MaxBatch leases in one write (Transport.AckBatch).
	AckBatch(ctx context.Context, ls []Lease) error
	// Nack hands a lease's message back, at once or after delay (Transport.Nack).
	Nack(ctx context.Context, l *Lease, delay time.Duration) error
	// Wait blocks until something may have become claimable (Transport.Wait). After Close it
	// returns an error wrapping stead.ErrClosed.
	Wait(ctx context.Context) error
	// Close releases the backend and wakes every Wait.
	Close() error
}
