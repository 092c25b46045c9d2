// Package memturn is the in-memory reference backend of the turn-persistence contract.
//
// New returns checked turn.Stores, like every backend constructor: the rules that need no stored
// state are kept by turn.NewStores, the rules that do by one Backend with all seven roles behind
// a single mutex, deterministic orders and a clock the caller chooses (WithClock, with
// ManualClock for tests). It passes the whole turn/turntest suite and is meant for tests and
// single-process tools: nothing survives the process.
//
//	clock := memturn.NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
//	stores := memturn.New(memturn.WithClock(clock.Now))
//	receipt, err := stores.Commits.Commit(ctx, "acme", bundle)
//
// For tests the backend can fail on demand at named points (FailNext), including after any stage
// of a commit bundle, so that the all-or-nothing behaviour of Commit is exercised, not assumed.
// Those affordances are on the backend, reached through the Stores' escape hatch:
//
//	stores.Backend().(*memturn.Backend).FailNext(memturn.AfterBundleStep(3), errCrash)
package memturn
