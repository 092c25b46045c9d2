package pgtransport

import (
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/transport"
)

// Schema returns the schema b's objects live in ("" for the search_path), for the package's
// external tests, which query those objects directly.
func (b *Backend) Schema() string { return b.cfg.schema }

// QueueAck and QueueNack queue the fenced ack and nack, for the tests of settling in a caller's
// transaction a lease claimed outside it.
func (b *Backend) QueueAck(q *pgx.Batch, ls []transport.Lease) error { return b.queueFencedAck(q, ls) }
func (b *Backend) QueueNack(q *pgx.Batch, l *transport.Lease, delay time.Duration) error {
	return b.queueFencedNack(q, l, delay)
}
