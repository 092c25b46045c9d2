// Package chaos runs fault drills against stead on PostgreSQL: worker processes under load, a
// throwaway PostgreSQL cluster of the drill's own, and faults — worker processes killed with
// SIGKILL, stopped with SIGSTOP past their lease, the server crashed and restarted — then counts
// what must never happen: work events lost, events applied twice (under two idempotency keys, or
// counted twice by the execution itself), timers fired early, unbalanced or left behind, outbox
// rows and messages left behind, compare-and-swap updates lost; and measures how long the workers
// took to step again after each restart.
//
// The failover drill (failover.go) runs on a primary and a synchronous standby instead, every
// client through TCP proxies of the drill's own to both: a clean failover and the fail back, a
// black-holed primary, a worker partitioned past its lease; it also measures the first step after
// each promotion.
//
// The drills run from this package's test:
//
//	go test ./internal/chaos                                       # the short forms (./test.sh runs them)
//	STEAD_CHAOS=long go test ./internal/chaos -run TestChaos -v -timeout 60m     # the long crash drill
//	STEAD_CHAOS=long go test ./internal/chaos -run TestFailover -v -timeout 30m  # the long failover drill
//
// The cluster is created with initdb on a free loopback port in a temp dir and removed after:
// the drill never touches another server. Without PostgreSQL's server programs the test skips,
// unless STEAD_REQUIRE_POSTGRES=1.
//
// The workers are processes of the test binary itself (WorkerFromEnv), each a default worker
// (pgstore and pgtransport on one pool; every second one in the shared-transaction mode) whose
// actions record their effects in a SQLite ledger of its own, outside the database under test.
package chaos
