// Package storetest is the conformance suite of the stead.Store contract.
//
// A backend proves itself by calling Run from one of its tests with a Factory that returns a
// fresh, empty store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, cfg storetest.Config) stead.Store {
//			s := mystore.Open(...)           // its own schema, file or instance
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// Run checks every rule of the contract through the public interface alone, one named subtest
// per rule (Commit/StaleCommitConflicts, Outbox/ClaimsAreExclusive, List/PagesWhileInserting,
// ...), so a failure names the rule that broke. Subtests run in parallel and each asks the
// factory for its own store; ids are prefixed per subtest as well, so that a backend whose
// factory hands out stores on one shared database still sees no interference from its neighbours.
//
// The suite never sleeps: time-dependent rules (leases, due timers) pass explicit times, as the
// contract does. Times are compared at microsecond precision, the precision every backend keeps,
// and JSON documents are compared by value, since a backend may reformat them (PostgreSQL jsonb
// does).
package storetest
