package pgstore

import (
	"context"

	"github.com/steadhq/stead"
)

var _ stead.StatsBackend = (*Backend)(nil)

// DBSystemName names the database in the worker's spans (the semantic conventions'
// db.system.name).
func (b *Backend) DBSystemName() string { return "postgresql" }

// StoreStats implements stead.StatsBackend: the outbox and spawn backlogs, in one statement.
// The counts read both tables whole, so it is for gauges sampled every few seconds at most.
func (b *Backend) StoreStats(ctx context.Context) (stead.StoreStats, error) {
	var st stead.StoreStats
	err := b.with(ctx, "store stats", func(q querier) error {
		return q.QueryRow(ctx, b.st.StoreStatsBacklog).Scan(&st.Outbox, &st.Spawns)
	})
	return st, err
}
