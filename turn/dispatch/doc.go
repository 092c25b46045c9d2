// Package dispatch delivers the turn outbox (turn.OutboxStore) on any turn backend: memturn,
// sqliteturn, pgturn, or one written elsewhere.
//
// A Dispatcher runs rounds. Each round releases the claims whose lease ran out (a dispatcher
// that died mid-send), asks the Reconciler about the outcome-unknown rows due for a check,
// claims up to a batch of due rows with its worker id, hands each to the caller's Sender under a
// per-send timeout, and records the outcome on the row:
//
//	sent                   -> MarkCompleted
//	Retry(code)            -> MarkFailed(code, now+backoff), or settled failed once MaxAttempts is reached
//	Reject(code)           -> MarkFailed(code), settled at once
//	Unknown, other errors,
//	  a timed-out send     -> MarkOutcomeUnknown, then reconciliation:
//	                          Delivered -> completed, NotDelivered -> due again now,
//	                          StillUnknown -> checked again later, on the backoff schedule
//
// The backoff doubles from Backoff.Initial to Backoff.Max, each delay shortened by up to
// Backoff.Jitter at random (see Backoff); the default schedule is about 1 s, 2 s, 4 s … capped
// at 10 minutes, over at most 8 attempts.
//
// Exactly-once delivery is not on offer from any outbox; what this one keeps: a row is handed to
// one dispatcher at a time (the store's claim), a claim is released only after its Lease, which
// New requires to be longer than a send can run, so no row is sent twice while its claim holds;
// and a send whose outcome is unknown is never retried blindly, only after the Reconciler says
// the destination never got it. Give the destination the entry's IdempotencyKey where it takes
// one, and the rare duplicate (a dispatcher stalled past its lease) is harmless too.
//
// Run loops until its context ends; the sends in flight then get Config.Grace to finish, their
// outcomes are recorded, and Run returns with no goroutine left behind. RunOnce runs a single
// round, for tests and for callers with a scheduler of their own. Every time the dispatcher
// claims, schedules or releases by comes from Config.Clock.
//
// The outbox contract has no listing of outcome-unknown rows, so a dispatcher reconciles the
// rows it marked itself; the rows a stopped dispatcher left unknown are reconciled once their
// ids are handed to Watch.
package dispatch
