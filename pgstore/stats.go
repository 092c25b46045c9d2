package pgstore

import (
	"context"

	"github.com/steadhq/stead"
)

var _ stead.StatsBackend = (*Backend)(nil)

// DBSystemName names the database in the worker's spans (the semantic conventions'
// db.system.name).
func (b *Backend) DBSystemName() string { return "postgresql" }

// StoreStats implements stead.StatsBackend: the outbox and spawn backlogs and the executions by
// status. The counts read whole tables (the status count walks stead_executions_status), so
// it is for gauges sampled every few seconds at most.
func (b *Backend) StoreStats(ctx context.Context) (stead.StoreStats, error) {
	st := stead.StoreStats{Executions: map[stead.Status]int64{}}
	err := b.with(ctx, "store stats", func(q querier) error {
		if err := q.QueryRow(ctx, b.sql.storeStatsBacklog).Scan(&st.Outbox, &st.Spawns); err != nil {
			return err
		}
		rows, err := q.Query(ctx, b.sql.storeStatsStatuses)
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
