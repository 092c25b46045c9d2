// Package storetest is the conformance suite of the execution store: every rule of the contract a
// stead.Backend must keep, checked through a *stead.Store alone.
//
// A backend proves itself by calling Run from one of its tests with a Factory that returns a
// fresh, empty store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, cfg storetest.Config) *stead.Store {
//			s := mystore.New(cfg.TraceCap)  // its own schema, file or instance
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// Run names one subtest per rule, group/rule in lower snake case (commit/stale_commit_conflicts,
// outbox/claims_are_exclusive, times/every_read_path_returns_utc_microseconds, ...), so a failure
// names the rule that broke. Subtests run in parallel and each asks the factory for its own store;
// ids are prefixed per subtest as well, so a factory that hands out stores on one shared database
// sees no interference between them.
//
// The suite never sleeps: time-dependent rules (leases, due timers) pass explicit times, as the
// contract does. Times must come back exactly, at microsecond precision; JSON documents are
// compared by value, since a backend may reformat them (PostgreSQL jsonb does).
//
// # Writing a backend
//
// A backend implements stead.Backend and is wrapped with stead.NewStore. The module
// examples/mapstore in this repository is one, written as a third party would write it (its own
// go.mod, no internal package), and CI runs this suite on it. The steps:
//
//  1. Implement the read methods. Arguments arrive checked: ids are valid, limits are 1 to
//     stead.MaxListLimit, times are UTC microseconds. Return what you stored; the Store puts
//     times in UTC and nil slices as empty ones. List gets a stead.ListQuery (filters, an After
//     key and a Limit) and returns rows in byte-wise id order; the Store builds pages and cursors.
//     With ListQuery.WithAttributes set, each row carries the execution's attributes.
//     ListQuery.Matches says what the filters mean: call it if you filter in Go; in SQL, select
//     the id prefix as the range id >= IDPrefix AND id < IDPrefixEnd (never LIKE, whose %, _ and
//     \ are patterns and which ignores ASCII case on SQLite), and an unset time is in no window.
//  2. Implement Commit and CommitBatch over a *stead.Write: compare the stored version with
//     Write.Expected (0 means the row must not exist), store Write.Execution (or Write.Record, its
//     encoding) and apply Write.Bundle, all atomically. A lost compare-and-swap is a
//     *stead.ConflictError and writes nothing. Timer ops arrive reduced to one per path.
//  3. Implement the relay methods: claims lease rows whose lease is unset or ended at or before now
//     until the given end, never handing one row to two callers at once.
//  4. Map driver errors to the sentinels (pgdb.Classify and sqlitedb.Classify do it for
//     PostgreSQL and SQLite): ErrUnavailable when nothing was written, ErrTimeout when the outcome
//     is unknown.
//  5. Call Run from a test, as above, with the race detector on. A SQL backend runs it on a real
//     database: pgdb/pgdbtest gives each test its own PostgreSQL schema.
package storetest
