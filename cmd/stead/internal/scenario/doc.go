// Package scenario is stead's end-to-end benchmark scenario: a backlog of events over many
// executions, drained by one worker (claim → load → step → commit → relay → ack), on SQLite or
// PostgreSQL, in the separate and the shared-transaction mode, batched or not. `stead bench` and
// BenchmarkEndToEnd run it; bench/results/runtime.md holds the figures.
//
// The scenario: Executions executions each get a start event and EventsPer-1 "tick" events, all
// published before the worker starts; the worker (Concurrency claim loops, BatchSize messages per
// batch, optionally SharedTx) drains them; the run measures events per second from the worker's
// start to the last commit, publish→commit latency quantiles, and the peak heap in use. The
// machine is a hand-written counter, so the figures are those of the worker, the store and the
// transport. PgbenchCeiling gives the server's single-row UPDATE rate at the same concurrency.
package scenario
