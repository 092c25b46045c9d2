// Package memturn is the in-memory reference backend of the turn-persistence contract.
//
// One Store implements all seven roles behind a single mutex, with deterministic orders, a
// clock the caller chooses (New(clock), with ManualClock for tests) and fault injection
// (FailNext) at named points — including after any stage of a commit bundle — so that the
// all-or-nothing behaviour of Commit is exercised, not assumed. It passes the whole
// turn/turntest suite and is meant for tests and single-process tools: nothing survives the
// process.
package memturn
