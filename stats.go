package stead

import "context"

// StoreStats is what an execution store holds at one moment, for gauges: the outbox rows and
// spawn intents not yet relayed, and the executions by status.
type StoreStats struct {
	Outbox     int64
	Spawns     int64
	Executions map[Status]int64
}

// StatsBackend is what a Backend may implement to report StoreStats; it is optional (the worker's
// gauges leave out what a backend does not report). Its queries read whole tables or indexes, so
// callers sample it at a low rate, never per step.
type StatsBackend interface {
	StoreStats(ctx context.Context) (StoreStats, error)
}
