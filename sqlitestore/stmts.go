package sqlitestore

import (
	"context"
	"database/sql"
)

// The statements are prepared once: the writer's on its pinned connection, the readers' on each
// reader connection by database/sql as it opens them. SQLite then only binds and steps them.

const execColumns = `id, definition_id, status, outcome, active_path, parent_id, version, created_at, updated_at, finished_at, data`

type writeStmts struct {
	casUpdate, casIndexed, casInsert, version          *sql.Stmt
	outboxInsert, markProcessed, spawnInsert           *sql.Stmt
	timerSchedule, timerCancel, traceAppend, traceTrim *sql.Stmt
	purgeExecution, purgeProcessed, purgeTimers        *sql.Stmt
	purgeTrace, purgeOutbox, purgeSpawns               *sql.Stmt
	claimOutbox, claimSpawns, ackOutbox, ackSpawn      *sql.Stmt
	deleteTimer                                        *sql.Stmt
}

func (w *writeStmts) all() []**sql.Stmt {
	return []**sql.Stmt{
		&w.casUpdate, &w.casIndexed, &w.casInsert, &w.version, &w.outboxInsert, &w.markProcessed, &w.spawnInsert,
		&w.timerSchedule, &w.timerCancel, &w.traceAppend, &w.traceTrim,
		&w.purgeExecution, &w.purgeProcessed, &w.purgeTimers, &w.purgeTrace, &w.purgeOutbox, &w.purgeSpawns,
		&w.claimOutbox, &w.claimSpawns, &w.ackOutbox, &w.ackSpawn, &w.deleteTimer,
	}
}

func (w *writeStmts) prepare(ctx context.Context, db preparer) error {
	return prepareAll(ctx, db, w.all(), []string{
		// The compare-and-swap leaves out the indexed columns: SQLite rewrites an index whenever
		// one of its columns is SET, even to the same value, which would triple the pages a
		// state-only commit writes. casIndexed writes them only when they really change.
		`UPDATE executions SET outcome = ?, active_path = ?, parent_id = ?,
			version = ?, created_at = ?, updated_at = ?, finished_at = ?, data = ?
		 WHERE id = ? AND version = ?`,
		`UPDATE executions SET definition_id = ?2, status = ?3
		 WHERE id = ?1 AND (definition_id <> ?2 OR status <> ?3)`,
		`INSERT INTO executions (` + execColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		 ON CONFLICT (id) DO NOTHING`,
		`SELECT version FROM executions WHERE id = ?`,
		`INSERT INTO outbox (source, target, event) VALUES (?, ?, ?)`,
		`INSERT INTO processed_events (execution_id, event_id) VALUES (?, ?) ON CONFLICT DO NOTHING`,
		`INSERT INTO spawns (parent_id, child_id, root_path, context) VALUES (?, ?, ?, ?)`,
		`INSERT INTO timers (execution_id, path, fire_at) VALUES (?, ?, ?)
		 ON CONFLICT (execution_id, path) DO UPDATE SET fire_at = excluded.fire_at`,
		`DELETE FROM timers WHERE execution_id = ? AND path = ?`,
		// The index is computed in the statement: the largest index so far plus one, so it keeps
		// climbing after older steps were evicted and needs no read beforehand. Selecting from
		// the execution's row inserts nothing (and returns no row) when there is none.
		`INSERT INTO trace (execution_id, idx, step)
		 SELECT e.id, (SELECT COALESCE(MAX(t.idx), -1) + 1 FROM trace t WHERE t.execution_id = e.id), ?2
		 FROM executions e WHERE e.id = ?1
		 RETURNING idx`,
		`DELETE FROM trace WHERE execution_id = ? AND idx <= ?`,
		`DELETE FROM executions WHERE id = ? AND version = ?`,
		// The sweeps delete nothing while the execution exists: a purge at a stale version
		// changes nothing, one of an absent id removes whatever a crash left.
		`DELETE FROM processed_events WHERE execution_id = ?1 AND NOT EXISTS (SELECT 1 FROM executions WHERE id = ?1)`,
		`DELETE FROM timers WHERE execution_id = ?1 AND NOT EXISTS (SELECT 1 FROM executions WHERE id = ?1)`,
		`DELETE FROM trace WHERE execution_id = ?1 AND NOT EXISTS (SELECT 1 FROM executions WHERE id = ?1)`,
		`DELETE FROM outbox WHERE target = ?1 AND NOT EXISTS (SELECT 1 FROM executions WHERE id = ?1)`,
		`DELETE FROM spawns WHERE parent_id = ?1 AND NOT EXISTS (SELECT 1 FROM executions WHERE id = ?1)`,
		`UPDATE outbox SET lease_until = ?1
		 WHERE seq IN (SELECT seq FROM outbox WHERE lease_until <= ?2 ORDER BY seq LIMIT ?3)
		 RETURNING seq, source, target, event`,
		`UPDATE spawns SET lease_until = ?1
		 WHERE seq IN (SELECT seq FROM spawns WHERE lease_until <= ?2 ORDER BY seq LIMIT ?3)
		 RETURNING seq, parent_id, child_id, root_path, context`,
		`DELETE FROM outbox WHERE seq = ?`,
		`DELETE FROM spawns WHERE seq = ?`,
		`DELETE FROM timers WHERE execution_id = ? AND path = ? AND fire_at = ?`,
	})
}

type readStmts struct {
	load, loadForEvent, loadForEvents, isProcessed       *sql.Stmt
	readTrace, timers                                    *sql.Stmt
	outboxAll, outboxBySource, spawnsAll, spawnsByParent *sql.Stmt
	dueTimers                                            *sql.Stmt
}

func (r *readStmts) all() []**sql.Stmt {
	return []**sql.Stmt{
		&r.load, &r.loadForEvent, &r.loadForEvents, &r.isProcessed, &r.readTrace, &r.timers,
		&r.outboxAll, &r.outboxBySource, &r.spawnsAll, &r.spawnsByParent, &r.dueTimers,
	}
}

func (r *readStmts) prepare(ctx context.Context, db preparer) error {
	return prepareAll(ctx, db, r.all(), []string{
		`SELECT data FROM executions WHERE id = ?`,
		`SELECT data, EXISTS (SELECT 1 FROM processed_events WHERE execution_id = ?1 AND event_id = ?2)
		 FROM executions WHERE id = ?1`,
		// One row per ref of the JSON array [[execution id, event id], ...], in its order, with
		// NULL data where there is no execution: one statement, so one snapshot.
		`SELECT r.key, e.data, EXISTS (SELECT 1 FROM processed_events p
		     WHERE p.execution_id = r.value ->> 0 AND p.event_id = r.value ->> 1)
		 FROM json_each(?1) r LEFT JOIN executions e ON e.id = r.value ->> 0`,
		`SELECT EXISTS (SELECT 1 FROM processed_events WHERE execution_id = ? AND event_id = ?)`,
		`SELECT idx, step FROM trace WHERE execution_id = ? ORDER BY idx`,
		`SELECT path, fire_at FROM timers WHERE execution_id = ? ORDER BY path`,
		`SELECT seq, source, target, event FROM outbox ORDER BY seq LIMIT ?`,
		`SELECT seq, source, target, event FROM outbox WHERE source = ? ORDER BY seq LIMIT ?`,
		`SELECT seq, parent_id, child_id, root_path, context FROM spawns ORDER BY seq LIMIT ?`,
		`SELECT seq, parent_id, child_id, root_path, context FROM spawns WHERE parent_id = ? ORDER BY seq LIMIT ?`,
		`SELECT execution_id, path, fire_at FROM timers WHERE fire_at <= ?
		 ORDER BY fire_at, execution_id, path LIMIT ?`,
	})
}

// preparer is a *sql.DB (statements prepared on each pooled connection as needed) or a *sql.Conn
// (statements bound to that connection).
type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

func prepareAll(ctx context.Context, db preparer, dst []**sql.Stmt, queries []string) error {
	for i, q := range queries {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		*dst[i] = st
	}
	return nil
}
