package pgstore

import (
	"strconv"
	"strings"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
)

// Every statement the store sends, named after the method that sends it. {schema} is expanded
// once, by New; {limit} and {where} per call (withLimit, listSQL). The functions they call are
// in migrations/001_init.sql. TestStatementsPairedByName holds these constants, the statements
// struct (field X from constant sqlX, by pgdb.ExpandByName) and Statements to the same names.

// Reads.
const (
	sqlLoad = `SELECT data FROM {schema}stead_executions WHERE id = $1::text`

	sqlLoadForEvent = `SELECT r_data, r_processed FROM {schema}stead_load_for_event($1::text, $2::text)`

	// One row per pair, in the order of the arrays, missing executions included (NULL data).
	sqlLoadForEvents = `SELECT r_ord, r_data, r_processed
		FROM {schema}stead_load_for_events($1::text[], $2::text[])`

	// sqlLoadForEventsOnce is sqlLoadForEvents for refs that repeat an execution: its record
	// comes with the ref marked first ($3) only (stead_load_for_events_once).
	sqlLoadForEventsOnce = `SELECT r_ord, r_data, r_processed
		FROM {schema}stead_load_for_events_once($1::text[], $2::text[], $3::boolean[])`

	sqlIsProcessed = `SELECT EXISTS (SELECT 1 FROM {schema}stead_processed_events
		WHERE execution_id = $1::text AND event_id = $2::text)`

	// {where} is the filter of the page (listSQL).
	sqlList = `SELECT id, definition_id, status, outcome, active_path, parent_id, version,
		created_at, updated_at, finished_at FROM {schema}stead_executions{where}
		ORDER BY id LIMIT {limit}`

	// List with the attributes of each row (stead.ListQuery.WithAttributes): the page as sqlList
	// makes it, then, for its rows only, their attributes aggregated from the index on
	// execution_id, still one statement. The four arrays come from one scan of the same rows, so
	// they are aligned; an execution without attributes has NULL arrays.
	sqlListWithAttrs = `SELECT p.*, a.keys, a.kinds, a.ss, a.ns FROM (
		SELECT id, definition_id, status, outcome, active_path, parent_id, version,
		created_at, updated_at, finished_at FROM {schema}stead_executions{where}
		ORDER BY id LIMIT {limit}) p
		CROSS JOIN LATERAL (SELECT array_agg(key) AS keys, array_agg(kind) AS kinds, array_agg(s) AS ss,
		array_agg(n) AS ns FROM {schema}stead_attributes WHERE execution_id = p.id) a
		ORDER BY p.id`

	// An attribute condition of List and Count (listSQL): a semi-join on one of
	// stead_attributes' partial indexes, by key, then (numeric kinds) kind, then the comparison
	// or the set (= ANY of an array) on s or n, which also says the column is not NULL, so the
	// partial index applies. listSQL numbers $K, $T and $V and writes {op}.
	sqlListAttrStr = `id IN (SELECT execution_id FROM {schema}stead_attributes
		WHERE key = $K::text AND s {op} $V)`
	sqlListAttrNum = `id IN (SELECT execution_id FROM {schema}stead_attributes
		WHERE key = $K::text AND kind = $T::smallint AND n {op} $V)`

	// {where} is the filter (listSQL); the groups are counted in the index's order.
	sqlCount = `SELECT definition_id, status, count(*) FROM {schema}stead_executions{where}
		GROUP BY definition_id, status`

	sqlCursorKey = `SELECT value FROM {schema}stead_secrets WHERE name = 'cursor'`

	sqlReadTrace = `SELECT idx, entry FROM {schema}stead_trace
		WHERE execution_id = $1::text ORDER BY idx`

	sqlTimers = `SELECT execution_id, path, fire_at FROM {schema}stead_timers
		WHERE execution_id = $1::text ORDER BY path`

	sqlPendingOutbox = `SELECT seq, source_id, target_id, event FROM {schema}stead_outbox
		ORDER BY seq LIMIT {limit}`

	sqlPendingOutboxOfSource = `SELECT seq, source_id, target_id, event FROM {schema}stead_outbox
		WHERE source_id = $1::text ORDER BY seq LIMIT {limit}`

	sqlPendingSpawns = `SELECT seq, parent_id, child_id, root_path, context, trace FROM {schema}stead_spawns
		ORDER BY seq LIMIT {limit}`

	sqlPendingSpawnsOfParent = `SELECT seq, parent_id, child_id, root_path, context, trace FROM {schema}stead_spawns
		WHERE parent_id = $1::text ORDER BY seq LIMIT {limit}`
)

// Commits.
const (
	sqlCommitState = `SELECT {schema}stead_commit_state($1::text, $2::text, $3::text, $4::text,
		$5::text, $6::text, $7::timestamptz, $8::timestamptz, $9::timestamptz, $10::text,
		$11::bigint, $12::text)`

	sqlCommitBundle = `SELECT {schema}stead_commit_bundle($1::text, $2::text, $3::text, $4::text,
		$5::text, $6::text, $7::timestamptz, $8::timestamptz, $9::timestamptz, $10::text,
		$11::bigint, $12::text, $13::text[], $14::text[], $15::text[], $16::text[], $17::text[],
		$18::text[], $19::text[], $20::timestamptz[], $21::text[], $22::text, $23::bigint)`

	sqlCommitBatch = `SELECT r_ord, r_seq FROM {schema}stead_commit_batch($1::text[], $2::text[],
		$3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::timestamptz[],
		$9::timestamptz[], $10::text[], $11::bigint[], $12::text[], $13::text[],
		$14::int[], $15::text[], $16::text[], $17::int[], $18::text[], $19::text[], $20::text[],
		$21::text[], $22::int[], $23::text[], $24::timestamptz[], $25::int[], $26::text[], $27::bigint)`

	// sqlRequireCommitted aborts the transaction unless the commit queued before it won
	// (QueueCommitGuarded, stead_require_committed).
	sqlRequireCommitted = `SELECT {schema}stead_require_committed($1::text, $2::bigint)`

	// sqlCommitAlso finishes the writes that carry further processed events
	// (stead.Bundle.AlsoProcessed), sent behind their commit in the same transaction and round
	// trip: it moves each one's row from the version the commit function wrote ($2, the expected
	// one plus one) to its own ($5: one more per further event), and records its events ($3 and
	// $4, each naming its write by position). A write won if this transaction wrote its row at
	// that version: the row's xmin is the transaction's own id, the commit functions running no
	// subtransactions (see stead_require_committed). It returns the positions of the writes it found won, which
	// the caller checks against the commit's own answer (a savepoint of the caller's would hide a
	// win).
	sqlCommitAlso = `WITH w AS (
		UPDATE {schema}stead_executions e SET version = w.final
		FROM unnest($1::text[], $2::bigint[], $5::bigint[]) WITH ORDINALITY AS w(id, version, final, ord)
		WHERE e.id = w.id AND e.version = w.version
			AND e.xmin = pg_current_xact_id_if_assigned()::xid
		RETURNING w.ord, w.id
	), ins AS (
		INSERT INTO {schema}stead_processed_events (execution_id, event_id)
		SELECT w.id, p.event_id FROM unnest($3::int[], $4::text[]) AS p(item, event_id)
		JOIN w ON w.ord = p.item
		ON CONFLICT DO NOTHING
	)
	SELECT ord FROM w`

	// sqlCommitAlsoWon is sqlCommitAlso for writes known to have won, in the caller's
	// transaction, when sqlCommitAlso could not tell (the caller is in a savepoint): $1 and $2
	// the events, $3 to $5 each write's id, the version the commit wrote and its own.
	sqlCommitAlsoWon = `WITH v AS (
		UPDATE {schema}stead_executions e SET version = v.final
		FROM unnest($3::text[], $4::bigint[], $5::bigint[]) AS v(id, version, final)
		WHERE e.id = v.id AND e.version = v.version
	)
	INSERT INTO {schema}stead_processed_events (execution_id, event_id)
		SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING`

	// sqlCommitAttrs replaces the attributes of the writes that carry stead.Write.ReplaceAttributes,
	// sent behind their commit (and behind sqlCommitAlso) in the same transaction and round trip,
	// as sqlCommitAlso is: $1 and $2 each write's id and final version, $3 to $7 the attributes,
	// each naming its write by position. A write won if this transaction wrote its row at that
	// version (its xmin, as for sqlCommitAlso), or, with $8, when the caller knows it won (a win
	// its savepoint hid). The write's rows are deleted and its attributes inserted: both parts
	// read the statement's snapshot, so the delete never sees the new rows. It returns the
	// positions it found won.
	sqlCommitAttrs = `WITH w AS (
		SELECT w.ord, w.id FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS w(id, version, ord)
		JOIN {schema}stead_executions e ON e.id = w.id AND e.version = w.version
			AND ($8::boolean OR e.xmin = pg_current_xact_id_if_assigned()::xid)
	), a AS (
		SELECT w.id, a.key, a.kind, a.s, a.n
		FROM unnest($3::int[], $4::text[], $5::smallint[], $6::text[], $7::bigint[]) AS a(item, key, kind, s, n)
		JOIN w ON w.ord = a.item
	), del AS (
		DELETE FROM {schema}stead_attributes t USING w WHERE t.execution_id = w.id
	), ins AS (
		INSERT INTO {schema}stead_attributes (execution_id, key, kind, s, n)
		SELECT id, key, kind, s, n FROM a
	)
	SELECT ord FROM w`

	// sqlConflicts reads the versions stored now of the executions whose CAS was lost.
	sqlConflicts = `SELECT id, version FROM {schema}stead_executions WHERE id = ANY($1::text[])`
)

// Trace, purge, relays, timers.
const (
	// The index comes from the execution row, which the UPDATE locks: concurrent appends and
	// commits of one execution queue on that lock and each gets the next index.
	sqlAppendTrace = `WITH bump AS (
		UPDATE {schema}stead_executions SET trace_next = trace_next + 1
		WHERE id = $1::text RETURNING trace_next - 1 AS idx),
	ins AS (
		INSERT INTO {schema}stead_trace (execution_id, idx, entry)
		SELECT $1::text, idx, $2::text FROM bump RETURNING idx),
	cap AS (
		DELETE FROM {schema}stead_trace t USING ins
		WHERE $3::bigint > 0 AND t.execution_id = $1::text AND t.idx <= ins.idx - $3::bigint)
	SELECT idx FROM ins`

	// sqlPurge deletes an execution at an expected version and, in the same statement (so the
	// same transaction), everything that belongs to it. If the row exists at another version
	// nothing is deleted. The second EXISTS reads the statement's snapshot, so a row the first
	// CTE deleted still counts as present there; that is why the row counts as gone when del
	// deleted it OR it was never there. The result says whether the execution itself was deleted.
	sqlPurge = `WITH del AS (
		DELETE FROM {schema}stead_executions WHERE id = $1::text AND version = $2::bigint RETURNING id
	), go AS (
		SELECT EXISTS (SELECT 1 FROM del)
			OR NOT EXISTS (SELECT 1 FROM {schema}stead_executions WHERE id = $1::text) AS ok
	), p AS (
		DELETE FROM {schema}stead_processed_events WHERE execution_id = $1::text AND (SELECT ok FROM go)
	), t AS (
		DELETE FROM {schema}stead_trace WHERE execution_id = $1::text AND (SELECT ok FROM go)
	), m AS (
		DELETE FROM {schema}stead_timers WHERE execution_id = $1::text AND (SELECT ok FROM go)
	), o AS (
		DELETE FROM {schema}stead_outbox WHERE target_id = $1::text AND (SELECT ok FROM go)
	), s AS (
		DELETE FROM {schema}stead_spawns WHERE parent_id = $1::text AND (SELECT ok FROM go)
	), a AS (
		DELETE FROM {schema}stead_attributes WHERE execution_id = $1::text AND (SELECT ok FROM go)
	)
	SELECT EXISTS (SELECT 1 FROM del)`

	// The claim locks up to {limit} free rows in seq order, skipping rows other claimers hold,
	// and leases them. The outer UPDATE finds them by seq = ANY(array) on the primary key, so
	// neither half ever scans the table: a plain join could hash a seq scan of a small, churning
	// outbox full of dead rows.
	sqlClaimOutbox = `UPDATE {schema}stead_outbox SET lease_until = $2::timestamptz
		WHERE seq = ANY (ARRAY(SELECT seq FROM {schema}stead_outbox
			WHERE lease_until IS NULL OR lease_until <= $1::timestamptz
			ORDER BY seq LIMIT {limit} FOR UPDATE SKIP LOCKED))
		RETURNING seq, source_id, target_id, event`

	sqlAckOutbox = `DELETE FROM {schema}stead_outbox WHERE seq = ANY($1::bigint[])`

	sqlClaimSpawns = `UPDATE {schema}stead_spawns SET lease_until = $2::timestamptz
		WHERE seq = ANY (ARRAY(SELECT seq FROM {schema}stead_spawns
			WHERE lease_until IS NULL OR lease_until <= $1::timestamptz
			ORDER BY seq LIMIT {limit} FOR UPDATE SKIP LOCKED))
		RETURNING seq, parent_id, child_id, root_path, context, trace`

	sqlAckSpawns = `DELETE FROM {schema}stead_spawns WHERE seq = ANY($1::bigint[])`

	sqlDueTimers = `SELECT execution_id, path, fire_at FROM {schema}stead_timers
		WHERE fire_at <= $1::timestamptz
		ORDER BY fire_at, execution_id, path LIMIT {limit}`

	sqlDeleteTimer = `DELETE FROM {schema}stead_timers
		WHERE execution_id = $1::text AND path = $2::text AND fire_at = $3::timestamptz`
)

// sqlStoreStatsBacklog is the gauges' sample (stead.StatsBackend): whole-table counts, read at a
// low rate.
const sqlStoreStatsBacklog = `SELECT (SELECT count(*) FROM {schema}stead_outbox),
	(SELECT count(*) FROM {schema}stead_spawns)`

// statements holds every statement of one store: field X is constant sqlX with {schema} expanded,
// filled once by name from sqlByName (pgdb.ExpandByName), so no field carries another's text.
type statements struct {
	Load, LoadForEvent, LoadForEvents, LoadForEventsOnce, IsProcessed, List, Count string
	ListWithAttrs                                                                  string
	ReadTrace, Timers                                                              string
	PendingOutbox, PendingOutboxOfSource, PendingSpawns, PendingSpawnsOfParent     string
	CommitState, CommitBundle, CommitBatch, Conflicts, RequireCommitted            string
	CommitAlso, CommitAlsoWon, CommitAttrs, ListAttrStr, ListAttrNum               string
	AppendTrace, Purge, ClaimOutbox, AckOutbox, ClaimSpawns, AckSpawns             string
	DueTimers, DeleteTimer, CursorKey                                              string
	StoreStatsBacklog                                                              string
}

func newStatements(schema string) (statements, error) {
	var s statements
	if err := pgdb.ExpandByName(&s, sqlByName, schema); err != nil {
		return statements{}, err
	}
	return s, nil
}

// sqlByName names every statement, constant sqlX under "sqlX": newStatements fills field X
// from it, and Statements reports it as "X".
var sqlByName = map[string]string{
	"sqlLoad":                  sqlLoad,
	"sqlLoadForEvent":          sqlLoadForEvent,
	"sqlLoadForEventsOnce":     sqlLoadForEventsOnce,
	"sqlLoadForEvents":         sqlLoadForEvents,
	"sqlIsProcessed":           sqlIsProcessed,
	"sqlList":                  sqlList,
	"sqlListWithAttrs":         sqlListWithAttrs,
	"sqlCount":                 sqlCount,
	"sqlReadTrace":             sqlReadTrace,
	"sqlTimers":                sqlTimers,
	"sqlPendingOutbox":         sqlPendingOutbox,
	"sqlPendingOutboxOfSource": sqlPendingOutboxOfSource,
	"sqlPendingSpawns":         sqlPendingSpawns,
	"sqlPendingSpawnsOfParent": sqlPendingSpawnsOfParent,
	"sqlCommitState":           sqlCommitState,
	"sqlCommitBundle":          sqlCommitBundle,
	"sqlCommitBatch":           sqlCommitBatch,
	"sqlConflicts":             sqlConflicts,
	"sqlRequireCommitted":      sqlRequireCommitted,
	"sqlCommitAlso":            sqlCommitAlso,
	"sqlCommitAlsoWon":         sqlCommitAlsoWon,
	"sqlCommitAttrs":           sqlCommitAttrs,
	"sqlListAttrStr":           sqlListAttrStr,
	"sqlListAttrNum":           sqlListAttrNum,
	"sqlAppendTrace":           sqlAppendTrace,
	"sqlPurge":                 sqlPurge,
	"sqlClaimOutbox":           sqlClaimOutbox,
	"sqlAckOutbox":             sqlAckOutbox,
	"sqlClaimSpawns":           sqlClaimSpawns,
	"sqlAckSpawns":             sqlAckSpawns,
	"sqlDueTimers":             sqlDueTimers,
	"sqlDeleteTimer":           sqlDeleteTimer,
	"sqlCursorKey":             sqlCursorKey,
	"sqlStoreStatsBacklog":     sqlStoreStatsBacklog,
}

// Statements returns the SQL each method of a store on schema ("" for the search_path) sends, by
// name, for tools that replay it: bench/pgstore hands pgbench exactly what the store sends. The
// names are the methods' ("Load", "ClaimOutbox"), with a suffix where one method sends several
// statements ("CommitState" and "CommitBundle" for Commit, "CommitAlso" behind a commit that
// carries stead.Bundle.AlsoProcessed, "CommitAlsoWon" for the rare write it could not see won,
// "PendingOutboxOfSource" for PendingOutbox with a source, "LoadForEventsOnce" for LoadForEvents
// when refs repeat an execution, "Conflicts" for the lookup after a
// lost compare-and-swap).
//
// Two placeholders are left in: {limit}, which the method replaces with its limit as a literal,
// and {where}, which List and Count replace with their filter (" WHERE …", or nothing).
// "ListAttrStr" and "ListAttrNum" are not statements but the conditions {where} holds for
// attributes, with their own placeholders: $K, $T and $V (the parameters of the key, the kind
// and the value) and {op} (the comparison).
func Statements(schema string) map[string]string {
	m := make(map[string]string, len(sqlByName))
	for name, sql := range sqlByName {
		m[strings.TrimPrefix(name, "sql")] = pgdb.Expand(sql, schema)
	}
	return m
}

// withLimit puts n in the {limit} placeholder of sql.
//
// Limits are written into the text rather than passed as parameters: after five executions a
// prepared statement may switch to a generic plan, and a generic plan does not know a parameter
// LIMIT, so PostgreSQL costs it for a tenth of the rows and may sort half a million of them
// instead of walking an index to the first hundred. Limits are checked integers and an
// application uses few distinct ones, so each keeps its own cached plan.
func withLimit(sql string, n int) string {
	return strings.Replace(sql, "{limit}", strconv.Itoa(n), 1)
}

// listSQL is the statement of one page of List (from the list statement) and its arguments.
// Every filter shape is its own text, so that its cached plan uses the index that fits it.
func listSQL(list string, sq *statements, q stead.ListQuery) (string, []any) {
	var where strings.Builder
	var args []any
	cond := func(c string, arg ...any) {
		if where.Len() == 0 {
			where.WriteString(" WHERE ")
		} else {
			where.WriteString(" AND ")
		}
		args = append(args, arg...)
		where.WriteString(strings.ReplaceAll(c, "$n", "$"+strconv.Itoa(len(args))))
	}
	if q.DefinitionID != "" {
		cond("definition_id = $n::text", q.DefinitionID)
	}
	switch len(q.Statuses) {
	case 0:
	case 1:
		cond("status = $n::text", string(q.Statuses[0]))
	default:
		statuses := make([]string, len(q.Statuses))
		for i, st := range q.Statuses {
			statuses[i] = string(st)
		}
		cond("status = ANY($n::text[])", statuses)
	}
	if q.RootsOnly {
		cond("parent_id IS NULL")
	}
	// The id prefix is a range of the "C"-collated id, exact byte for byte: LIKE would need its
	// %, _ and \ escaped, and a range needs nothing (stead.PrefixEnd).
	if q.IDPrefix != "" {
		cond("id >= $n::text", q.IDPrefix)
	}
	if q.IDPrefixEnd != "" {
		cond("id < $n::text", q.IDPrefixEnd)
	}
	for _, w := range [...]struct {
		column string
		r      stead.TimeRange
	}{{"created_at", q.Created}, {"updated_at", q.Updated}, {"finished_at", q.Finished}} {
		if !w.r.From.IsZero() {
			cond(w.column+" >= $n::timestamptz", w.r.From)
		}
		if !w.r.Before.IsZero() {
			cond(w.column+" < $n::timestamptz", w.r.Before)
		}
	}
	for _, f := range q.Attributes {
		kind := f.Values[0].Kind()
		text := sq.ListAttrNum
		if kind == stead.AttrKindString {
			text = sq.ListAttrStr
		}
		args = append(args, f.Key)
		text = strings.Replace(text, "$K", "$"+strconv.Itoa(len(args)), 1)
		if kind != stead.AttrKindString {
			args = append(args, int16(kind))
			text = strings.Replace(text, "$T", "$"+strconv.Itoa(len(args)), 1)
		}
		op, typ := string(f.Op), "::bigint"
		if kind == stead.AttrKindString {
			typ = "::text"
		}
		if f.Op == stead.AttrIn {
			op, typ = "= ANY(", typ+"[])"
			if kind == stead.AttrKindString {
				vs := make([]string, len(f.Values))
				for i, v := range f.Values {
					vs[i] = v.Str()
				}
				args = append(args, vs)
			} else {
				vs := make([]int64, len(f.Values))
				for i, v := range f.Values {
					vs[i] = v.Num()
				}
				args = append(args, vs)
			}
		} else if kind == stead.AttrKindString {
			args = append(args, f.Values[0].Str())
		} else {
			args = append(args, f.Values[0].Num())
		}
		text = strings.Replace(text, "{op}", op, 1)
		text = strings.Replace(text, "$V", "$"+strconv.Itoa(len(args))+typ, 1)
		cond(text)
	}
	if q.After != "" {
		cond("id > $n::text", q.After)
	}
	return withLimit(strings.Replace(list, "{where}", where.String(), 1), q.Limit), args
}
