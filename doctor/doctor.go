package doctor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/pgdb"
)

// Options selects what Stranded looks at.
type Options struct {
	// StoreSchema and TransportSchema are the schemas of pgstore's and pgtransport's tables
	// ("" for the search_path), as given to pgstore.WithSchema and pgtransport.WithSchema.
	StoreSchema, TransportSchema string
	// QuietFor leaves out executions updated more recently than that (default DefaultQuietFor):
	// a step between its commit and its relay has rows in flight that the check could miss.
	QuietFor time.Duration
	// Limit bounds the list (default DefaultLimit), oldest update first.
	Limit int
}

// Defaults for Options.
const (
	DefaultQuietFor = time.Minute
	DefaultLimit    = 1000
)

// Finding is one execution that nothing in the database will move.
type Finding struct {
	ID           string
	DefinitionID string
	Status       stead.Status
	ActivePath   string
	UpdatedAt    time.Time
	// Certain is true when no event from outside can move it either: a pending or cancelling
	// execution whose start or cancellation is gone. A running one may be waiting, as designed,
	// for an event the application sends.
	Certain bool
}

// sqlStranded finds the executions; each NOT EXISTS is planned as an anti-join, one pass over
// each table.
const sqlStranded = `
SELECT e.id, e.definition_id, e.status, COALESCE(e.active_path, ''), COALESCE(e.updated_at, '-infinity')
FROM {store}stead_executions e
WHERE e.status IN ('pending', 'running', 'cancelling')
  AND COALESCE(e.updated_at, '-infinity') < $1
  AND NOT EXISTS (SELECT 1 FROM {transport}transport_messages m WHERE m.group_id = e.id)
  AND NOT EXISTS (SELECT 1 FROM {store}stead_timers t WHERE t.execution_id = e.id)
  AND NOT EXISTS (SELECT 1 FROM {store}stead_outbox o WHERE o.target_id = e.id)
  AND NOT EXISTS (SELECT 1 FROM {store}stead_outbox o WHERE o.source_id = e.id)
  AND NOT EXISTS (SELECT 1 FROM {store}stead_spawns s WHERE s.parent_id = e.id)
  AND NOT EXISTS (SELECT 1 FROM {store}stead_executions c
                  WHERE c.parent_id = e.id AND c.status IN ('pending', 'running', 'cancelling', 'suspended'))
ORDER BY 5, e.id
LIMIT $2`

// Stranded lists the executions that nothing in the database will move (see the package doc),
// oldest update first. It reads only, in one statement; errors wrap the stead sentinels.
func Stranded(ctx context.Context, pool *pgxpool.Pool, o Options) ([]Finding, error) {
	switch {
	case pool == nil:
		return nil, check.Invalidf("doctor: pool is nil")
	case o.QuietFor < 0 || o.Limit < 0:
		return nil, check.Invalidf("doctor: negative quiet time or limit")
	}
	for _, s := range []string{o.StoreSchema, o.TransportSchema} {
		if s != "" {
			if err := pgdb.CheckSchema(s); err != nil {
				return nil, fmt.Errorf("doctor: %w", err)
			}
		}
	}
	if o.QuietFor == 0 {
		o.QuietFor = DefaultQuietFor
	}
	if o.Limit == 0 {
		o.Limit = DefaultLimit
	}
	q := strings.NewReplacer("{store}", pgdb.Qualifier(o.StoreSchema),
		"{transport}", pgdb.Qualifier(o.TransportSchema)).Replace(sqlStranded)
	rows, err := pool.Query(ctx, q, time.Now().Add(-o.QuietFor), o.Limit)
	if err != nil {
		return nil, fmt.Errorf("doctor: %w", pgdb.Classify(err))
	}
	defer rows.Close()
	var out []Finding
	for rows.Next() {
		var f Finding
		var status string
		if err := rows.Scan(&f.ID, &f.DefinitionID, &status, &f.ActivePath, &f.UpdatedAt); err != nil {
			return nil, fmt.Errorf("doctor: %w", pgdb.Classify(err))
		}
		f.Status = stead.Status(status)
		f.Certain = f.Status != stead.StatusRunning
		f.UpdatedAt = f.UpdatedAt.UTC()
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("doctor: %w", pgdb.Classify(err))
	}
	return out, nil
}
