package sqlitestore

import (
	"maps"
	"strings"
)

// Every statement the store sends, named after the method that sends it. Times are unix
// microseconds, NULL when unset (migrations/001_init.sql). Each field of writeStmts and readStmts
// is prepared from the constant named sql and the field's name (see stmts.go).

// Write transactions begin (BEGIN IMMEDIATE) and commit in sqlitedb, on the database's writer
// connection, which every component on the file shares.

// execColumns are the columns beside the record, which List reads instead of it.
const execColumns = `id, definition_id, status, outcome, active_path, parent_id, version,
	created_at, updated_at, finished_at`

// Commit and CommitBatch.
const (
	sqlCommitInsert = `INSERT INTO stead_executions (` + execColumns + `, data)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`
	// The compare-and-swap leaves out the indexed columns: SQLite rewrites an index whenever one
	// of its columns (or of its partial-index condition) is SET, even to the same value, which
	// would triple the pages a state-only commit writes. sqlCommitIndexed writes them only when
	// they really change: definition_id and status, and parent_id and finished_at, which the
	// index of finished roots (002_finished_roots.sql) holds.
	sqlCommitUpdate = `UPDATE stead_executions SET outcome = ?, active_path = ?,
			version = ?, created_at = ?, updated_at = ?, data = ?
		WHERE id = ? AND version = ?`
	sqlCommitIndexed = `UPDATE stead_executions
		SET definition_id = ?2, status = ?3, parent_id = ?4, finished_at = ?5
		WHERE id = ?1 AND (definition_id <> ?2 OR status <> ?3 OR parent_id <> ?4
			OR finished_at IS NOT ?5)`
	// The stored version, for the error of a lost compare-and-swap.
	sqlCommitVersion   = `SELECT version FROM stead_executions WHERE id = ?`
	sqlCommitEmit      = `INSERT INTO stead_outbox (source_id, target_id, event) VALUES (?, ?, ?)`
	sqlCommitProcessed = `INSERT INTO stead_processed_events (execution_id, event_id) VALUES (?, ?)
		ON CONFLICT DO NOTHING`
	sqlCommitSpawn = `INSERT INTO stead_spawns (parent_id, child_id, root_path, context, trace)
		VALUES (?, ?, ?, ?, ?)`
	sqlCommitSchedule = `INSERT INTO stead_timers (execution_id, path, fire_at) VALUES (?, ?, ?)
		ON CONFLICT (execution_id, path) DO UPDATE SET fire_at = excluded.fire_at`
	sqlCommitCancel = `DELETE FROM stead_timers WHERE execution_id = ? AND path = ?`
	// A write that replaces the execution's attributes (stead.Write.ReplaceAttributes) deletes
	// its rows and inserts each attribute: at most stead.MaxAttributes, in-process.
	sqlCommitAttrsClear = `DELETE FROM stead_attributes WHERE execution_id = ?`
	sqlCommitAttr       = `INSERT INTO stead_attributes (execution_id, key, kind, s, n) VALUES (?, ?, ?, ?, ?)`
)

// AppendTrace, and Commit for a bundle's trace step.
const (
	// The index is computed in the statement: the largest index so far plus one, so it keeps
	// climbing after older steps were evicted and needs no read beforehand. Selecting from the
	// execution's row inserts nothing (and returns no row) when there is none.
	sqlAppendTrace = `INSERT INTO stead_trace (execution_id, idx, entry)
		SELECT e.id, (SELECT COALESCE(MAX(t.idx), -1) + 1 FROM stead_trace t
				WHERE t.execution_id = e.id), ?2
		FROM stead_executions e WHERE e.id = ?1
		RETURNING idx`
	sqlAppendTraceTrim = `DELETE FROM stead_trace WHERE execution_id = ? AND idx <= ?`
)

// Purge. The sweeps delete nothing while the execution exists: a purge at a stale version
// changes nothing, one of an absent id removes whatever was left.
const (
	sqlPurge          = `DELETE FROM stead_executions WHERE id = ? AND version = ?`
	sqlPurgeProcessed = `DELETE FROM stead_processed_events
		WHERE execution_id = ?1 AND NOT EXISTS (SELECT 1 FROM stead_executions WHERE id = ?1)`
	sqlPurgeTimers = `DELETE FROM stead_timers
		WHERE execution_id = ?1 AND NOT EXISTS (SELECT 1 FROM stead_executions WHERE id = ?1)`
	sqlPurgeTrace = `DELETE FROM stead_trace
		WHERE execution_id = ?1 AND NOT EXISTS (SELECT 1 FROM stead_executions WHERE id = ?1)`
	sqlPurgeOutbox = `DELETE FROM stead_outbox
		WHERE target_id = ?1 AND NOT EXISTS (SELECT 1 FROM stead_executions WHERE id = ?1)`
	sqlPurgeSpawns = `DELETE FROM stead_spawns
		WHERE parent_id = ?1 AND NOT EXISTS (SELECT 1 FROM stead_executions WHERE id = ?1)`
	sqlPurgeAttrs = `DELETE FROM stead_attributes
		WHERE execution_id = ?1 AND NOT EXISTS (SELECT 1 FROM stead_executions WHERE id = ?1)`
)

// The relays. A claim sets the lease end (?1) of the oldest rows never leased or whose lease
// ended by now (?2); an unset lease is NULL rather than 0, so that a now before 1970 (a negative
// number of microseconds) still finds the rows no one claimed.
const (
	sqlClaimOutbox = `UPDATE stead_outbox SET lease_until = ?1
		WHERE seq IN (SELECT seq FROM stead_outbox WHERE lease_until IS NULL OR lease_until <= ?2
			ORDER BY seq LIMIT ?3)
		RETURNING seq, source_id, target_id, event`
	sqlAckOutbox   = `DELETE FROM stead_outbox WHERE seq = ?`
	sqlClaimSpawns = `UPDATE stead_spawns SET lease_until = ?1
		WHERE seq IN (SELECT seq FROM stead_spawns WHERE lease_until IS NULL OR lease_until <= ?2
			ORDER BY seq LIMIT ?3)
		RETURNING seq, parent_id, child_id, root_path, context, trace`
	sqlAckSpawns   = `DELETE FROM stead_spawns WHERE seq = ?`
	sqlDeleteTimer = `DELETE FROM stead_timers WHERE execution_id = ? AND path = ? AND fire_at = ?`
)

// The reads.
const (
	sqlLoad         = `SELECT data FROM stead_executions WHERE id = ?`
	sqlLoadForEvent = `SELECT data,
			EXISTS (SELECT 1 FROM stead_processed_events WHERE execution_id = ?1 AND event_id = ?2)
		FROM stead_executions WHERE id = ?1`
	// One row per ref of the JSON array [[execution id, event id], ...], in its order, with NULL
	// data where there is no execution: one statement, so one snapshot.
	sqlLoadForEvents = `SELECT r.key, e.data, EXISTS (SELECT 1 FROM stead_processed_events p
			WHERE p.execution_id = r.value ->> 0 AND p.event_id = r.value ->> 1)
		FROM json_each(?1) r LEFT JOIN stead_executions e ON e.id = r.value ->> 0`
	sqlIsProcessed = `SELECT EXISTS (SELECT 1 FROM stead_processed_events
		WHERE execution_id = ? AND event_id = ?)`
	sqlReadTrace = `SELECT idx, entry FROM stead_trace WHERE execution_id = ? ORDER BY idx`
	sqlTimers    = `SELECT path, fire_at FROM stead_timers WHERE execution_id = ? ORDER BY path`
	sqlCursorKey = `SELECT value FROM stead_secrets WHERE name = 'cursor'`

	sqlDueTimers = `SELECT execution_id, path, fire_at FROM stead_timers WHERE fire_at <= ?
		ORDER BY fire_at, execution_id, path LIMIT ?`

	sqlPendingOutbox         = `SELECT seq, source_id, target_id, event FROM stead_outbox ORDER BY seq LIMIT ?`
	sqlPendingOutboxBySource = `SELECT seq, source_id, target_id, event FROM stead_outbox
		WHERE source_id = ? ORDER BY seq LIMIT ?`
	sqlPendingSpawns = `SELECT seq, parent_id, child_id, root_path, context, trace FROM stead_spawns
		ORDER BY seq LIMIT ?`
	sqlPendingSpawnsByParent = `SELECT seq, parent_id, child_id, root_path, context, trace FROM stead_spawns
		WHERE parent_id = ? ORDER BY seq LIMIT ?`
)

// List's statement depends on the filter; listSQL assembles it from these parts. Its arguments
// (listArgs) are the cursor's id, then one per part in this order, then the limit.
//
// The id prefix is a range, id >= prefix AND id < stead.PrefixEnd(prefix): exact (ids compare
// byte-wise under SQLite's BINARY collation, while LIKE would ignore ASCII case and need %, _
// and \ escaped) and a range of the primary key or of whichever index ends in id.
const (
	sqlList           = `SELECT ` + execColumns + ` FROM stead_executions WHERE id > ?`
	sqlListDefinition = ` AND definition_id = ?`
	sqlListStatus     = ` AND status IN (?`
	sqlListRootsOnly  = ` AND parent_id = ''`
	sqlListPrefix     = ` AND id >= ?`
	sqlListPrefixEnd  = ` AND id < ?`
	sqlListCreated    = ` AND created_at >= ?`
	sqlListCreatedEnd = ` AND created_at < ?`
	sqlListUpdated    = ` AND updated_at >= ?`
	sqlListUpdatedEnd = ` AND updated_at < ?`
	// The finish bounds also say finished_at IS NOT NULL implicitly, which lets SQLite walk the
	// partial index of finished roots (migrations/002_listing.sql) when the filter is roots only.
	sqlListFinished    = ` AND finished_at >= ?`
	sqlListFinishedEnd = ` AND finished_at < ?`
	sqlListOrder       = ` ORDER BY id LIMIT ?`

	// The first attribute condition is a semi-join on one of stead_attributes' partial indexes:
	// the key, then (for the numeric kinds) the kind, then the comparison on s or n, or the set
	// (an IN list of as many parameters as values). The comparison also says that s or n is not
	// NULL, which lets SQLite use the partial index. SQLite may walk that list of ids, or the
	// executions in the order of another index, whichever it estimates cheaper.
	sqlListAttrNum = ` AND id IN (SELECT execution_id FROM stead_attributes WHERE key = ? AND kind = ? AND n`
	sqlListAttrStr = ` AND id IN (SELECT execution_id FROM stead_attributes WHERE key = ? AND s`
	// Every further condition is a probe of the rows the others kept, by the primary key
	// (execution_id, key): SQLite would build the whole list of a further IN (measured: the
	// 125 000 ids of region=eu, 85 ms at 1M executions, to keep 126 of 1 001).
	sqlListAttrNumProbe = ` AND EXISTS (SELECT 1 FROM stead_attributes a WHERE a.execution_id = stead_executions.id
		AND a.key = ? AND a.kind = ? AND a.n`
	sqlListAttrStrProbe = ` AND EXISTS (SELECT 1 FROM stead_attributes a WHERE a.execution_id = stead_executions.id
		AND a.key = ? AND a.s`

	// Count is List's statement with the groups in place of the columns, no page and no cursor
	// (an id range would steer SQLite to the primary key instead of stead_executions_counts).
	sqlListCount      = `SELECT definition_id, status, count(*) FROM stead_executions WHERE 1`
	sqlListCountGroup = ` GROUP BY definition_id, status`

	// A listing that asks for attributes (stead.ListQuery.WithAttributes) is the page, made
	// first (MATERIALIZED: flattened, SQLite could compute the column for every row the filter
	// keeps before it sorts and cuts the page), then each row's attributes as a JSON array of
	// [key, kind, s, n] by the primary key (execution_id, key).
	sqlListAttrsHead = `WITH page AS MATERIALIZED (`
	sqlListAttrsTail = `) SELECT page.*, (SELECT json_group_array(json_array(a.key, a.kind, a.s, a.n))
		FROM stead_attributes a WHERE a.execution_id = page.id) FROM page ORDER BY page.id`
)

// listShape is which parts a listing uses: its statement's text and its cache key.
type listShape struct {
	count      bool // Count's statement, not List's
	definition bool
	statuses   int
	rootsOnly  bool
	prefix     bool
	prefixEnd  bool
	bounds     [6]bool // created from, before; updated from, before; finished from, before
	// attrParts is the text of the attribute conditions (attrParts in read.go): it depends only
	// on each condition's column, comparison and set size, the values being parameters.
	attrParts string
	// attrs is a listing that returns each row's attributes (List only).
	attrs bool
}

var boundParts = [6]string{sqlListCreated, sqlListCreatedEnd, sqlListUpdated, sqlListUpdatedEnd, sqlListFinished, sqlListFinishedEnd}

// listSQL is List's statement for a shape. Each shape walks the index that matches it from the
// cursor on (keyset paging), so a deep page costs what the first does.
func listSQL(sh listShape) string {
	var b strings.Builder
	if sh.attrs {
		b.WriteString(sqlListAttrsHead)
	}
	if sh.count {
		b.WriteString(sqlListCount)
	} else {
		b.WriteString(sqlList)
	}
	if sh.definition {
		b.WriteString(sqlListDefinition)
	}
	if sh.statuses > 0 {
		b.WriteString(sqlListStatus + strings.Repeat(`, ?`, sh.statuses-1) + `)`)
	}
	if sh.rootsOnly {
		b.WriteString(sqlListRootsOnly)
	}
	if sh.prefix {
		b.WriteString(sqlListPrefix)
	}
	if sh.prefixEnd {
		b.WriteString(sqlListPrefixEnd)
	}
	for i, on := range sh.bounds {
		if on {
			b.WriteString(boundParts[i])
		}
	}
	b.WriteString(sh.attrParts)
	if sh.count {
		b.WriteString(sqlListCountGroup)
	} else {
		b.WriteString(sqlListOrder)
	}
	if sh.attrs {
		b.WriteString(sqlListAttrsTail)
	}
	return b.String()
}

// statements is every statement above but List's, by the name of its constant.
var statements = map[string]string{
	"sqlCommitInsert":     sqlCommitInsert,
	"sqlCommitUpdate":     sqlCommitUpdate,
	"sqlCommitIndexed":    sqlCommitIndexed,
	"sqlCommitVersion":    sqlCommitVersion,
	"sqlCommitEmit":       sqlCommitEmit,
	"sqlCommitProcessed":  sqlCommitProcessed,
	"sqlCommitSpawn":      sqlCommitSpawn,
	"sqlCommitSchedule":   sqlCommitSchedule,
	"sqlCommitCancel":     sqlCommitCancel,
	"sqlCommitAttrsClear": sqlCommitAttrsClear,
	"sqlCommitAttr":       sqlCommitAttr,
	"sqlAppendTrace":      sqlAppendTrace,
	"sqlAppendTraceTrim":  sqlAppendTraceTrim,

	"sqlPurge":          sqlPurge,
	"sqlPurgeProcessed": sqlPurgeProcessed,
	"sqlPurgeTimers":    sqlPurgeTimers,
	"sqlPurgeTrace":     sqlPurgeTrace,
	"sqlPurgeOutbox":    sqlPurgeOutbox,
	"sqlPurgeSpawns":    sqlPurgeSpawns,
	"sqlPurgeAttrs":     sqlPurgeAttrs,

	"sqlClaimOutbox": sqlClaimOutbox,
	"sqlAckOutbox":   sqlAckOutbox,
	"sqlClaimSpawns": sqlClaimSpawns,
	"sqlAckSpawns":   sqlAckSpawns,
	"sqlDeleteTimer": sqlDeleteTimer,

	"sqlLoad":                  sqlLoad,
	"sqlLoadForEvent":          sqlLoadForEvent,
	"sqlLoadForEvents":         sqlLoadForEvents,
	"sqlIsProcessed":           sqlIsProcessed,
	"sqlReadTrace":             sqlReadTrace,
	"sqlTimers":                sqlTimers,
	"sqlCursorKey":             sqlCursorKey,
	"sqlDueTimers":             sqlDueTimers,
	"sqlPendingOutbox":         sqlPendingOutbox,
	"sqlPendingOutboxBySource": sqlPendingOutboxBySource,
	"sqlPendingSpawns":         sqlPendingSpawns,
	"sqlPendingSpawnsByParent": sqlPendingSpawnsByParent,
	"sqlStoreStatsBacklog":     sqlStoreStatsBacklog,
}

// sqlStoreStatsBacklog is the gauges' sample (stead.StatsBackend): whole-table counts, read at a
// low rate.
const sqlStoreStatsBacklog = `SELECT (SELECT count(*) FROM stead_outbox), (SELECT count(*) FROM stead_spawns)`

// Statements returns the SQL each method sends, by the name of its constant (sqlCommitUpdate,
// sqlLoadForEvent…), for tools that replay it, such as bench/sqlite. List's statement depends on
// the filter and is not among them. The map is a copy.
func Statements() map[string]string { return maps.Clone(statements) }
