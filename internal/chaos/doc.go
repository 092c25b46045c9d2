// Package chaos runs fault drills against stead on PostgreSQL: worker processes under load, a
// throwaway PostgreSQL cluster of the drill's own, and faults — worker processes killed with
// SIGKILL, stopped with SIGSTOP past their lease, the server crashed and restarted — then counts
// what must never happen: work events lost, events applied twice (under two idempotency keys, or
// counted twice by the execution itself), timers fired early, unbalanced or left behind, outbox
// rows and messages left behind, compare-and-swap updates lost; and measures how long the workers
// took to step again after each restart.
//
// The drills run from this package's test:
//
//	go test ./internal/chaos                                       # the short form (./test.sh runs it)
//	STEAD_CHAOS=long go test ./internal/chaos -v -timeout 60m      # the long form (RELIABILITY.md)
//
// The cluster is created with initdb on a free loopback port in a temp dir and removed after:
// the drill never touches another server. Without PostgreSQL's server programs the test skips,
// unless STEAD_REQUIRE_POSTGRES=1.
//
// The workers are processes of the test binary itself (WorkerFromEnv), each a default worker
// (pgstore and pgtransport on one pool; every second one in the shared-transaction mode) whose
// actions record their effects in a SQLite ledger of its own, outside the database under test.
package chaos
