package pgtransport

import (
	"context"
	"fmt"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/transport"
)

// PublishPriced publishes ev to group in one statement, at the priority that the SQL expression
// priority yields when the statement runs, and publishes nothing when it yields NULL: it reports
// whether it published. priority is a scalar expression over another table of the same database,
// whose placeholders start at $4 and take args.
//
// It is for the package that owns that table: a group's priority is only known to the
// transport while the group has messages, so a sender that wants the right priority for an idle
// group, or wants to refuse a group that names nothing, would otherwise read the table first, in
// a round trip of its own. pgtx prices worker.Client.Send with the store's executions this way.
// ev is checked as Publish checks it.
func (b *Backend) PublishPriced(ctx context.Context, group string, ev stead.Event, priority string, args ...any) (bool, error) {
	if b.closed.Load() {
		return false, errClosed
	}
	if priority == "" {
		return false, check.Invalidf("publish priced: empty priority expression")
	}
	pub, err := b.preparePublish([]transport.Outgoing{{Group: group, Event: ev}})
	if err != nil || pub == nil {
		return false, err
	}
	// The clock goes after the caller's placeholders; no flow is named (a remembered key still
	// applies to a group this creates).
	now := fmt.Sprintf("$%d::timestamptz", 4+len(args))
	sql := `SELECT CASE WHEN s.p IS NULL THEN NULL ELSE ` + pgdb.Qualifier(b.cfg.schema) + `transport_publish($1::text[], $2::text[], ARRAY[s.p], $3::text, ` +
		now + `, NULL::text[], NULL::int[], NULL::int[], NULL::bigint[]) END
		FROM (SELECT (` + priority + `)::int AS p) s`
	var created *bool
	if err := b.pool.QueryRow(ctx, sql, append(append([]any{pub[0], pub[1], pub[3]}, args...), pub[4])...).Scan(&created); err != nil {
		return false, fail("publish", err)
	}
	if created == nil {
		return false, nil
	}
	if *created {
		b.sig.Notify()
	}
	return true, nil
}
