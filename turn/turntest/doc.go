// Package turntest is the conformance suite of the turn-persistence contract: 27 checks that
// prove a backend right through the public interfaces of package turn alone. Anything that
// passes them is a valid turn store, whatever it is built on.
//
// In a test, hand Run a Factory that returns an empty set of stores:
//
//	func TestConformance(t *testing.T) {
//		turntest.Run(t, func(ctx context.Context) (turn.Stores, error) {
//			return memturn.New(), nil
//		}, turntest.Parallel())
//	}
//
// Each check is a named subtest. Outside `go test`, RunAll returns a Report with one Outcome per
// check; it never panics and never stops early.
//
// Every conflict a check provokes (a duplicate id, a second blocking card, an outbox key enqueued
// twice, a lost compare-and-swap) must match turn.ErrConflict and say which rule refused the
// write in words a caller can show: an error whose message is the bare sentinel, or carries the
// database's own text ("UNIQUE constraint failed", "duplicate key value violates", a SQLSTATE),
// fails the check. Keep the driver's error in the chain for errors.As, out of the message.
//
// Time: every instant a rule depends on (an expiry sweep, a claim, a reaping cutoff) is passed
// explicitly, as fixed offsets from the Unix epoch; the suite never reads or advances a
// backend's clock, and checks the times a backend stamps itself only for presence and
// consistency. A backend on a real clock (PostgreSQL) passes it as well as one on a stopped
// clock.
//
// ExtraChecks (RunExtra) go beyond the contract's 27: bad input of every kind, 32 concurrent
// admissions of one key, and exactly-once paging while writers append concurrently.
//
// Every check uses accounts, ids and an outbox destination of its own, so several checks, or
// several runs, can share one database. Three operations of the contract act on every tenant,
// and the checks that use them only look at their own rows: ExpireDue, ListUnfinishedTurns with
// AllAccounts, and ClaimDue/ReleaseExpiredClaims (the outbox is a system queue with no
// account). On a shared database those checks may claim or expire rows of other writers, so
// give them a database of their own when other outbox consumers are running.
package turntest
