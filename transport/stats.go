package transport

import (
	"context"
	"time"
)

// QueueStat is the waiting messages of one priority: how many, and when the oldest was created
// (its event's CreatedAt; zero when unknown).
type QueueStat struct {
	Priority int
	Depth    int64
	Oldest   time.Time
}

// StatsBackend is what a Backend may implement to report its queues, by priority, for gauges; it
// is optional. Callers sample it at a low rate, never per claim.
type StatsBackend interface {
	QueueStats(ctx context.Context) ([]QueueStat, error)
}
