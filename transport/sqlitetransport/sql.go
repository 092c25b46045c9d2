package sqlitetransport

// Every statement the transport sends, named after the method that sends it. stmts.go prepares
// each under its name; TestStatementsPairedByName checks the pairing. The schema is in
// migrations/001_init.sql. Every operation is one transaction of the database's writer, which
// begins (BEGIN IMMEDIATE, taking the write lock first) and commits it.

// PublishBatch: create the group if it is missing (an existing group keeps its priority); give a
// group it created the group's remembered key, if there is one (UPDATE FROM matches no row
// otherwise); append the message.
const (
	sqlPublishGroup = `INSERT INTO transport_groups (group_id, priority) VALUES (?1, ?2) ON CONFLICT (group_id) DO NOTHING`
	sqlPublishLimit = `UPDATE transport_groups SET flow_key = r.flow_key FROM transport_flow_groups AS r
	WHERE transport_groups.group_id = ?1 AND r.group_id = ?1`
	sqlPublishMessage = `INSERT INTO transport_messages (group_id, event) VALUES (?1, ?2)`
)

// ClaimBatch: pick the heads of the first claimable groups in claim order, lease their groups,
// and delete any empty group met on the way.
//
// The claim order: a free group's key is when it was last served (never: lowest), an expired
// lease's key is when it ended; ties go to the lower id. A lease ending exactly now still holds.
// Groups waiting for admission (wait_seq set) are not in the claim order's partial indexes: the
// literal wait_seq IS NULL lets SQLite use them.
const (
	claimPickGroups = `
SELECT g.group_id, g.priority, m.seq, m.event
FROM (
    SELECT group_id, priority, coalesce(lock_until, -9223372036854775808) AS k
    FROM transport_groups
    WHERE (locked_by IS NULL OR lock_until < ?1) AND priority >= ?2 AND wait_seq IS NULL`
	claimPickHeads = `
    ORDER BY coalesce(lock_until, -9223372036854775808), group_id
    LIMIT ?3
) g
LEFT JOIN transport_messages m
    ON m.seq = (SELECT min(seq) FROM transport_messages WHERE group_id = g.group_id)
ORDER BY g.k, g.group_id`

	sqlClaimPick = claimPickGroups + claimPickHeads
	// The literal priority > 0 lets SQLite use the partial index of prioritised groups.
	sqlClaimPickPrioritised = claimPickGroups + ` AND priority > 0` + claimPickHeads

	sqlClaimLease       = `UPDATE transport_groups SET locked_by = ?1, lock_until = ?2 WHERE group_id = ?3`
	sqlClaimDeleteEmpty = `DELETE FROM transport_groups WHERE group_id = ?1 RETURNING flow_key`
)

// AckBatch: delete the message while the lease's token holds the group, then free an unlimited
// group behind the waiting ones (or a keyed one that keeps its place), or delete it when it has
// no message left. Otherwise a keyed group's admission ends with the ack: its key and whether it
// has messages left are read, then it is freed (and admitted again or queued) or deleted.
const (
	sqlAckMessage = `DELETE FROM transport_messages WHERE seq = ?1 AND group_id = ?2
	AND EXISTS (SELECT 1 FROM transport_groups WHERE group_id = ?2 AND locked_by = ?3)`
	// A keyed group keeps its place through the ack when nothing of its key waits, its key has
	// no rate to take a token from, and the key is within its concurrency (a lowered limit is
	// not): given back and taken again at once, it would end where it is, at the cost of a
	// queue's writes and reads. The key's count does not change.
	sqlAckFree = `UPDATE transport_groups SET locked_by = NULL, lock_until = ?1
	WHERE group_id = ?2 AND EXISTS (SELECT 1 FROM transport_messages WHERE group_id = ?2)
	AND (flow_key IS NULL OR (
		NOT EXISTS (SELECT 1 FROM transport_groups w
			WHERE w.flow_key = transport_groups.flow_key AND w.wait_seq IS NOT NULL)
		AND EXISTS (SELECT 1 FROM transport_flow_keys x WHERE x.flow_key = transport_groups.flow_key
			AND x.rate = 0 AND (x.concurrency = 0 OR x.admitted <= x.concurrency))))`
	sqlAckDeleteGroup = `DELETE FROM transport_groups WHERE group_id = ?1 AND flow_key IS NULL`
	sqlAckKeyed       = `SELECT flow_key, EXISTS (SELECT 1 FROM transport_messages WHERE group_id = ?1)
	FROM transport_groups WHERE group_id = ?1`
	sqlAckKeyedFree   = `UPDATE transport_groups SET locked_by = NULL, lock_until = ?1 WHERE group_id = ?2`
	sqlAckKeyedDelete = `DELETE FROM transport_groups WHERE group_id = ?1`
)

// Nack: park the group while the token holds it, or hand it back to the head of the round-robin.
const (
	sqlNackPark    = `UPDATE transport_groups SET lock_until = ?1 WHERE group_id = ?2 AND locked_by = ?3`
	sqlNackRelease = `UPDATE transport_groups SET locked_by = NULL, lock_until = NULL WHERE group_id = ?1 AND locked_by = ?2`
)

// sqlQueueStats is the gauges' sample (transport.StatsBackend): per priority, the waiting
// messages and the creation time of the earliest published. It reads the whole queue, at a low
// rate.
const sqlQueueStats = `SELECT q.priority, q.depth,
	(SELECT json_extract(event, '$.created_at') FROM transport_messages WHERE seq = q.first)
	FROM (SELECT g.priority AS priority, count(*) AS depth, min(m.seq) AS first
		FROM transport_messages m JOIN transport_groups g ON g.group_id = m.group_id
		GROUP BY g.priority) AS q
	ORDER BY q.priority`

// sqlExtend moves the end of a lease its token still holds (transport.Extender).
const sqlExtend = `UPDATE transport_groups SET lock_until = ?1 WHERE group_id = ?2 AND locked_by = ?3`

// Flows (transport.Limiter): a key's row is read once per transaction that needs it, admitted
// from in Go with transport.Flow's own token arithmetic, and written back whole.
const (
	sqlFlowKey = `SELECT concurrency, rate, per_us, admitted, tokens, tokens_at, due_at,
		EXISTS (SELECT 1 FROM transport_groups WHERE flow_key = ?1 AND wait_seq IS NOT NULL)
	FROM transport_flow_keys WHERE flow_key = ?1`
	sqlFlowPutKey = `INSERT INTO transport_flow_keys
	(flow_key, concurrency, rate, per_us, admitted, tokens, tokens_at, due_at)
	VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
	ON CONFLICT (flow_key) DO UPDATE SET concurrency = excluded.concurrency, rate = excluded.rate,
		per_us = excluded.per_us, admitted = excluded.admitted, tokens = excluded.tokens,
		tokens_at = excluded.tokens_at, due_at = excluded.due_at`
	// Only the first keyed publish of a group sets its key.
	sqlFlowRemember = `INSERT INTO transport_flow_groups (group_id, flow_key) VALUES (?1, ?2)
	ON CONFLICT (group_id) DO NOTHING`
	// A group joins the back of its key's queue.
	sqlFlowEnqueue = `UPDATE transport_groups SET wait_seq = coalesce((SELECT wait_seq FROM transport_groups
		WHERE flow_key = ?2 AND wait_seq IS NOT NULL ORDER BY wait_seq DESC LIMIT 1), 0) + 1
	WHERE group_id = ?1`
	// The oldest waiting groups of a key (?2 < 0: all).
	sqlFlowWaiting = `SELECT group_id FROM transport_groups
	WHERE flow_key = ?1 AND wait_seq IS NOT NULL ORDER BY wait_seq LIMIT ?2`
	sqlFlowAdmit        = `UPDATE transport_groups SET wait_seq = NULL WHERE group_id = ?1`
	sqlFlowCountWaiting = `SELECT count(*) FROM transport_groups WHERE flow_key = ?1 AND wait_seq IS NOT NULL`
	sqlFlowAnyWaiting   = `SELECT EXISTS (SELECT 1 FROM transport_groups WHERE flow_key = ?1 AND wait_seq IS NOT NULL)`
	// The claim's probe: keys whose waiting groups got a rate token since. Almost always empty,
	// and read through the partial index of keys with a due_at.
	sqlFlowDue = `SELECT flow_key FROM transport_flow_keys WHERE due_at IS NOT NULL AND due_at <= ?1`
	// Forget: drop the remembered key; read, then clear, the key of the group's row.
	sqlFlowForget  = `DELETE FROM transport_flow_groups WHERE group_id = ?1`
	sqlFlowGroup   = `SELECT flow_key, wait_seq IS NOT NULL FROM transport_groups WHERE group_id = ?1 AND flow_key IS NOT NULL`
	sqlFlowUnlimit = `UPDATE transport_groups SET flow_key = NULL, wait_seq = NULL WHERE group_id = ?1`
)
