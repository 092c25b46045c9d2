package sqlitetransport

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/steadhq/stead/transport"
)

var _ transport.StatsBackend = (*backend)(nil)

// DBSystemName names the database in the worker's spans (the semantic conventions'
// db.system.name).
func (b *backend) DBSystemName() string { return "sqlite" }

// QueueStats implements transport.StatsBackend. It runs on the transport's connection under the
// write gate, like every statement of the transport, so it is for gauges sampled every few
// seconds at most.
func (b *backend) QueueStats(ctx context.Context) ([]transport.QueueStat, error) {
	var out []transport.QueueStat
	err := b.write(ctx, "queue stats", func(ctx context.Context) error {
		out = out[:0]
		rows, err := b.st.QueueStats.QueryContext(ctx)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var q transport.QueueStat
			var created sql.NullString
			if err := rows.Scan(&q.Priority, &q.Depth, &created); err != nil {
				return err
			}
			if created.Valid {
				if q.Oldest, err = time.Parse(time.RFC3339Nano, created.String); err != nil {
					return fmt.Errorf("created_at of the oldest message: %w", err)
				}
			}
			out = append(out, q)
		}
		return rows.Err()
	})
	return out, err
}
