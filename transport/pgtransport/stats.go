package pgtransport

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/transport"
)

var _ transport.StatsBackend = (*Backend)(nil)

// DBSystemName names the database in the worker's spans (the semantic conventions'
// db.system.name).
func (b *Backend) DBSystemName() string { return "postgresql" }

// QueueStats implements transport.StatsBackend. It reads the whole queue, so it is for gauges
// sampled every few seconds at most.
func (b *Backend) QueueStats(ctx context.Context) ([]transport.QueueStat, error) {
	rows, err := b.pool.Query(ctx, b.st.QueueStats)
	if err != nil {
		return nil, fmt.Errorf("pgtransport: queue stats: %w", pgdb.Classify(err))
	}
	defer rows.Close()
	var out []transport.QueueStat
	for rows.Next() {
		var q transport.QueueStat
		var oldest pgtype.Timestamptz
		if err := rows.Scan(&q.Priority, &q.Depth, &oldest); err != nil {
			return nil, fmt.Errorf("pgtransport: queue stats: %w", pgdb.Classify(err))
		}
		if oldest.Valid {
			q.Oldest = oldest.Time.UTC()
		}
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgtransport: queue stats: %w", pgdb.Classify(err))
	}
	return out, nil
}
