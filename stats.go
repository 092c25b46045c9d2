package stead

import "context"

// StoreStats is what an execution store holds in its relay queues at one moment, for gauges:
// the outbox rows and spawn intents committed and not yet relayed. (Executions by status are
// Store.Count's.)
type StoreStats struct {
	Outbox int64
	Spawns int64
}

// StatsBackend is what a Backend may implement to report StoreStats; it is optional (the worker's
// gauges leave out what a backend does not report). Its queries count whole tables, so callers
// sample it at a low rate, never per step.
type StatsBackend interface {
	StoreStats(ctx context.Context) (StoreStats, error)
}
