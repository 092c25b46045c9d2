// Package pgbenchwork is the workload the pgstore benchmarks and the bench/pgstore harness share,
// so that both measure exactly the same thing: the executions and bundles they commit, and the
// commit sent one statement per round-trip that the store's single round-trip is compared with.
package pgbenchwork

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
)

// userContext is the context of every benchmark execution: a small order, about 150 bytes.
var userContext = json.RawMessage(`{"order":"A-1029","items":[{"sku":"x1","qty":2},{"sku":"y7","qty":1}],"total":129.5,"customer":"c-88213","notes":"leave at the door"}`)

// Execution returns a running execution of a typical size (about 400 bytes encoded).
func Execution(id string) *stead.Execution {
	now := time.Now()
	return &stead.Execution{ID: id, DefinitionID: "order", Status: stead.StatusRunning,
		ActivePath: "order.payment.waiting", Context: userContext,
		History: map[string]string{"order": "order.payment"}, CreatedAt: now, UpdatedAt: now}
}

// Executions returns n executions (one per caller), with ids prefix+"0", prefix+"1" and so on.
func Executions(prefix string, n int) []*stead.Execution {
	exes := make([]*stead.Execution, n)
	for i := range exes {
		exes[i] = Execution(fmt.Sprint(prefix, i))
	}
	return exes
}

// ComplexBundle is the complex step: 2 emits, a dedupe marker, 1 timer and a trace step. i makes
// the ids unique.
func ComplexBundle(i int) stead.Bundle {
	return stead.Bundle{
		Emits: []stead.Emit{
			{Target: "parent-1", Event: stead.Event{ID: fmt.Sprint("a", i), Kind: "Finished", Data: json.RawMessage(`{"ok":true}`)}},
			{Target: "audit", Event: stead.Event{ID: fmt.Sprint("b", i), Kind: "Audit"}},
		},
		ProcessedEventID: fmt.Sprint("ev", i),
		Timers:           []stead.TimerOp{{Action: stead.TimerSchedule, Path: "order.payment.waiting", FireAt: time.Now().Add(time.Hour)}},
		Trace: &stead.TraceStep{EventID: fmt.Sprint("ev", i), EventKind: "Paid", From: "order.payment.waiting",
			To: "order.shipping", Actions: []string{"charge"}},
	}
}

// PerStatementCommit commits exe and b against a pgstore schema (q is its qualifier, "schema."
// or "") one statement per round-trip: BEGIN, the CAS UPDATE, each emit, the dedupe marker, each
// timer, the trace INSERT with its MAX()+1 index and the cap DELETE, then COMMIT. It is the
// baseline of the complex-commit benchmark, not a store, and moves exe to its new version.
func PerStatementCommit(ctx context.Context, pool *pgxpool.Pool, q string, exe *stead.Execution, b stead.Bundle, traceCap int) error {
	next := *exe
	next.Version++
	data, err := stead.EncodeExecution(&next)
	if err != nil {
		return err
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	tag, err := tx.Exec(ctx, `UPDATE `+q+`stead_executions SET status = $1, active_path = $2, version = $3,
		data = $4, updated_at = $5 WHERE id = $6 AND version = $7`,
		string(next.Status), next.ActivePath, next.Version, string(data), next.UpdatedAt, next.ID, exe.Version)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("%s: lost CAS at version %d", exe.ID, exe.Version)
	}
	for _, e := range b.Emits {
		ev, err := json.Marshal(e.Event)
		if err != nil {
			return err
		}
		var seq int64
		if err := tx.QueryRow(ctx, `INSERT INTO `+q+`stead_outbox (source_id, target_id, event)
			VALUES ($1, $2, $3) RETURNING seq`, exe.ID, e.Target, string(ev)).Scan(&seq); err != nil {
			return err
		}
	}
	if b.ProcessedEventID != "" {
		if _, err := tx.Exec(ctx, `INSERT INTO `+q+`stead_processed_events VALUES ($1, $2)
			ON CONFLICT DO NOTHING`, exe.ID, b.ProcessedEventID); err != nil {
			return err
		}
	}
	for _, t := range b.Timers {
		if _, err := tx.Exec(ctx, `INSERT INTO `+q+`stead_timers VALUES ($1, $2, $3)
			ON CONFLICT (execution_id, path) DO UPDATE SET fire_at = EXCLUDED.fire_at`, exe.ID, t.Path, t.FireAt); err != nil {
			return err
		}
	}
	if b.Trace != nil {
		entry, err := json.Marshal(b.Trace)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+q+`stead_trace (execution_id, idx, entry)
			SELECT $1, COALESCE((SELECT max(idx) FROM `+q+`stead_trace WHERE execution_id = $1), -1) + 1, $2`,
			exe.ID, string(entry)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM `+q+`stead_trace WHERE execution_id = $1
			AND idx <= (SELECT max(idx) FROM `+q+`stead_trace WHERE execution_id = $1) - $2`, exe.ID, traceCap); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	exe.Version = next.Version
	return nil
}
