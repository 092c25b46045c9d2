package sqlitestore

import (
	"context"

	"github.com/steadhq/stead"
)

var _ stead.StatsBackend = (*backend)(nil)

// DBSystemName names the database in the worker's spans (the semantic conventions'
// db.system.name).
func (b *backend) DBSystemName() string { return "sqlite" }

// StoreStats implements stead.StatsBackend: the outbox and spawn backlogs, in one statement.
// The counts read both tables whole, so it is for gauges sampled every few seconds at most.
func (b *backend) StoreStats(ctx context.Context) (stead.StoreStats, error) {
	var st stead.StoreStats
	err := b.read(ctx, func(r *readStmts) error {
		return r.StoreStatsBacklog.QueryRowContext(ctx).Scan(&st.Outbox, &st.Spawns)
	})
	return st, err
}
