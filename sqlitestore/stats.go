package sqlitestore

import (
	"context"

	"github.com/steadhq/stead"
)

var _ stead.StatsBackend = (*backend)(nil)

// DBSystemName names the database in the worker's spans (the semantic conventions'
// db.system.name).
func (b *backend) DBSystemName() string { return "sqlite" }

// StoreStats implements stead.StatsBackend: the outbox and spawn backlogs and the executions by
// status. The counts read whole tables, so it is for gauges sampled every
// few seconds at most.
func (b *backend) StoreStats(ctx context.Context) (stead.StoreStats, error) {
	var st stead.StoreStats
	err := b.read(ctx, func(r *readStmts) error {
		st = stead.StoreStats{Executions: map[stead.Status]int64{}}
		if err := r.StoreStatsBacklog.QueryRowContext(ctx).Scan(&st.Outbox, &st.Spawns); err != nil {
			return err
		}
		rows, err := r.StoreStatsStatuses.QueryContext(ctx)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var status string
			var n int64
			if err := rows.Scan(&status, &n); err != nil {
				return err
			}
			st.Executions[stead.Status(status)] = n
		}
		return rows.Err()
	})
	return st, err
}
