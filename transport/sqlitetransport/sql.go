package sqlitetransport

// Every statement the transport sends, named after the method that sends it. stmts.go prepares
// each under its name; TestStatementsPairedByName checks the pairing. The schema is in
// migrations/001_init.sql.

// tx: every operation is one transaction that takes the write lock first.
const (
	sqlTxBegin    = `BEGIN IMMEDIATE`
	sqlTxCommit   = `COMMIT`
	sqlTxRollback = `ROLLBACK`
)

// PublishBatch: create the group if it is missing (an existing group keeps its priority), append
// the message.
const (
	sqlPublishGroup   = `INSERT INTO transport_groups (group_id, priority) VALUES (?1, ?2) ON CONFLICT (group_id) DO NOTHING`
	sqlPublishMessage = `INSERT INTO transport_messages (group_id, event) VALUES (?1, ?2)`
)

// ClaimBatch: pick the heads of the first claimable groups in claim order, lease their groups,
// and delete any empty group met on the way.
//
// The claim order: a free group's key is when it was last served (never: lowest), an expired
// lease's key is when it ended; ties go to the lower id. A lease ending exactly now still holds.
const (
	claimPickGroups = `
SELECT g.group_id, g.priority, m.seq, m.event
FROM (
    SELECT group_id, priority, coalesce(lock_until, -9223372036854775808) AS k
    FROM transport_groups
    WHERE (locked_by IS NULL OR lock_until < ?1) AND priority >= ?2`
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
	sqlClaimDeleteEmpty = `DELETE FROM transport_groups WHERE group_id = ?1`
)

// AckBatch: delete the message while the lease's token holds the group, then free the group
// behind the waiting ones, or delete it when it has no message left.
const (
	sqlAckMessage = `DELETE FROM transport_messages WHERE seq = ?1 AND group_id = ?2
	AND EXISTS (SELECT 1 FROM transport_groups WHERE group_id = ?2 AND locked_by = ?3)`
	sqlAckFree = `UPDATE transport_groups SET locked_by = NULL, lock_until = ?1
	WHERE group_id = ?2 AND EXISTS (SELECT 1 FROM transport_messages WHERE group_id = ?2)`
	sqlAckDeleteGroup = `DELETE FROM transport_groups WHERE group_id = ?1`
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
