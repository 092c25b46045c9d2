// Package transport is the contract for delivering events to executions: a durable queue of
// messages partitioned into groups, where a group is one execution id. You open one of its
// backends beside the store — memtransport, sqlitetransport or pgtransport — and hand it to
// worker.Config and worker.Client, which do the rest; the contract below matters to those who
// write a backend.
//
// A worker claims a message with a lease of some visibility, steps the execution, then acks the
// message (it is removed) or nacks it (it returns to its group, at once or after a delay). The
// guarantees every backend gives, and that transporttest.Run checks:
//
//   - at most one message per group is in flight, so one execution is never stepped by two
//     workers at once;
//   - within a group, messages are claimed in publish order (FIFO);
//   - groups are served fairly: a group that was just served goes behind every group that is
//     waiting, so one busy execution cannot starve the others (a group joining the round-robin
//     may wait a bounded number of claims more, see Transport.Claim);
//   - a lease that is neither acked nor nacked before it ends makes its message claimable again
//     (at-least-once delivery; the store's dedupe and version check make the step idempotent);
//   - a nack with a delay parks the group until the delay has passed;
//   - a claim may ask only for groups of at least some priority; a group's priority is the one
//     of its first publish and sticks while the group has messages;
//   - an ack or nack with a lease that is no longer current (it expired and the message was
//     claimed again) changes nothing.
//
// Time is the transport's injected clock, never the database's: every host of a fleet must keep
// its clock roughly in step (leases of seconds tolerate skew of milliseconds).
//
// # Transport and Backend
//
// Callers use *Transport, the checked front type; a backend implements Backend, storage only.
// Transport refuses bad input (wrapping stead.ErrInvalid), normalises what it passes down and what
// it hands back (times in UTC at microsecond precision, empty event data as nil), owns closing,
// and refuses a context that is already done, so that every backend behaves alike and a backend
// written elsewhere gets the rules for free. Each backend package's constructor returns the front
// type:
//
//	tr := memtransport.New()
//	defer tr.Close()
//	err := tr.Publish(ctx, "order-1", stead.Event{ID: "e1", Kind: "paid"}, 0)
//	l, err := tr.Claim(ctx, "worker-1", 30*time.Second, 0) // nil when nothing is claimable
//	err = tr.Ack(ctx, l)
//
// Backend-specific features are reached with Transport.Backend and a type assertion; those that
// bypass the front type run the same exported checks (PreparePublish, CheckClaim, CheckAck,
// CheckNack).
//
// Backends: memtransport (one process, tests), sqlitetransport (one host), pgtransport (many
// hosts, FOR NO KEY UPDATE SKIP LOCKED and LISTEN/NOTIFY).
package transport
