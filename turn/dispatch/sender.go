package dispatch

import (
	"context"
	"errors"
	"fmt"

	"github.com/steadhq/stead/turn"
)

// Sender delivers one outbox entry to its destination. It must honour ctx, which ends when the
// per-send timeout (Config.SendTimeout) runs out or the dispatcher shuts down past its grace.
//
// What Send returns decides the row's fate:
//   - nil: the destination acknowledged the entry; the row is completed;
//   - an error made by Retry: the entry was definitely not delivered and may be tried again; the
//     row is due again after the backoff, or settled as failed once MaxAttempts is reached;
//   - an error made by Reject: the entry was definitely not delivered and never will be (the
//     destination refused it); the row is settled as failed at once;
//   - an error made by Unknown, any other error, and a Send still running when its ctx ended: the
//     entry may or may not have been delivered; the row is marked outcome_unknown and is never
//     sent again until reconciliation (Reconciler) says it was not delivered.
//
// Unclassified errors count as unknown on purpose: sending twice is the failure an outbox exists
// to prevent, so only a sender that knows nothing left can ask for a retry. Send the entry's
// IdempotencyKey along where the destination accepts one.
type Sender interface {
	Send(ctx context.Context, e turn.OutboxEntry) error
}

// SenderFunc adapts a function to Sender.
type SenderFunc func(ctx context.Context, e turn.OutboxEntry) error

// Send calls f.
func (f SenderFunc) Send(ctx context.Context, e turn.OutboxEntry) error { return f(ctx, e) }

// sendError is a classified failure of a send.
type sendError struct {
	kind      outcome
	code      string // Retry, Reject: the stable reason recorded on the row
	remoteRef string // Unknown: what the destination said, for reconciliation
	err       error
}

func (e *sendError) Error() string {
	msg := fmt.Sprintf("dispatch: %s", e.kind)
	if e.code != "" {
		msg += " " + e.code
	}
	if e.err != nil {
		msg += ": " + e.err.Error()
	}
	return msg
}

func (e *sendError) Unwrap() error { return e.err }

// Retry reports a definite failure worth trying again, under a stable reason code (recorded as
// the row's last failure: codes only, never a message that may carry personal data). err, which
// may be nil, stays in the chain.
func Retry(code string, err error) error { return &sendError{kind: outcomeRetry, code: code, err: err} }

// Reject reports a definite failure that must not be retried (the destination refused the entry
// for good), under a stable reason code.
func Reject(code string, err error) error {
	return &sendError{kind: outcomeReject, code: code, err: err}
}

// Unknown reports a send whose outcome is unknown, with what the destination said (a request id,
// possibly empty) recorded as the row's remote reference for reconciliation.
func Unknown(remoteRef string, err error) error {
	return &sendError{kind: outcomeUnknown, remoteRef: remoteRef, err: err}
}

// outcome is what a send came to.
type outcome int

const (
	outcomeDelivered outcome = iota
	outcomeRetry
	outcomeReject
	outcomeUnknown
)

func (o outcome) String() string {
	return [...]string{"delivered", "retry", "rejected", "outcome unknown"}[o]
}

// classify reads what Send returned.
func classify(err error) *sendError {
	if err == nil {
		return &sendError{kind: outcomeDelivered}
	}
	var se *sendError
	if errors.As(err, &se) && se.kind != outcomeDelivered {
		return se
	}
	return &sendError{kind: outcomeUnknown, err: err}
}

// Reconciler finds out what became of an entry whose send ended with its outcome unknown, by
// asking the destination (with the entry's idempotency key or the recorded remote reference).
type Reconciler interface {
	Check(ctx context.Context, rec turn.OutboxRecord) (Verdict, error)
}

// ReconcilerFunc adapts a function to Reconciler.
type ReconcilerFunc func(ctx context.Context, rec turn.OutboxRecord) (Verdict, error)

// Check calls f.
func (f ReconcilerFunc) Check(ctx context.Context, rec turn.OutboxRecord) (Verdict, error) {
	return f(ctx, rec)
}

// Verdict is what a Reconciler found.
type Verdict int

const (
	// StillUnknown: the destination cannot tell yet; the row is left as it is and checked again
	// later (an error from Check counts as StillUnknown).
	StillUnknown Verdict = iota
	// Delivered: the destination has the entry; the row is completed.
	Delivered
	// NotDelivered: the destination never got the entry; the row is due again at once.
	NotDelivered
)

func (v Verdict) String() string {
	switch v {
	case Delivered:
		return "delivered"
	case NotDelivered:
		return "not delivered"
	}
	return "still unknown"
}
