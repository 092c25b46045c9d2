package pgtransport

// Every statement the transport sends, named after the method that sends it: each calls one of
// the functions of the migrations. {schema} stands for the schema's qualifier
// (pgdb.Expand); newStatements fills field X of statements from constant sqlX, by name
// (pgdb.ExpandByName), and TestStatementsPairedByName checks the pairing. Every parameter is cast, so the statements also work unprepared (behind
// PgBouncer), when the server is not asked for their types.
const (
	// sqlPublish is sent by PublishBatch, PublishBatchTx and QueuePublish.
	sqlPublish = `SELECT {schema}transport_publish($1::text[], $2::text[], $3::int[], $4::text, $5::timestamptz, ` +
		`$6::text[], $7::int[], $8::int[], $9::bigint[])`
	// sqlClaim is sent by ClaimBatch.
	sqlClaim = `SELECT r_group, r_priority, r_seq, r_event, r_key FROM {schema}transport_claim(` +
		`$1::timestamptz, $2::timestamptz, $3::text, $4::int, $5::int, $6::timestamptz, $7::text, $8::boolean)`
	// sqlAck is sent by AckBatch and queueFencedAck.
	sqlAck = `SELECT {schema}transport_ack($1::text[], $2::bigint[], $3::text[], $4::timestamptz, $5::text)`
	// sqlNack is sent by Nack and queueFencedNack.
	sqlNack = `SELECT {schema}transport_nack($1::text, $2::text, $3::timestamptz, $4::text)`
	// sqlClaimHeld is sent by ClaimHeldGroupsTx for one message per group.
	sqlClaimHeld = `SELECT r_group, r_priority, r_seq, r_event, r_key FROM {schema}transport_claim_held(` +
		`$1::timestamptz, $2::int, $3::int, $4::timestamptz, $5::text, $6::text[])`
	// sqlClaimHeldGroups is sent by ClaimHeldGroupsTx for more than one message per group.
	sqlClaimHeldGroups = `SELECT r_group, r_priority, r_seq, r_event, r_key FROM {schema}transport_claim_held_groups(` +
		`$1::timestamptz, $2::int, $3::int, $4::int, $5::timestamptz, $6::text, $7::text[])`
	// sqlAckHeld is sent by QueueAckHeld.
	sqlAckHeld = `SELECT {schema}transport_ack_held($1::text[], $2::bigint[], $3::timestamptz, $4::text)`
	// sqlAckHeldGroups is sent by QueueAckHeld for several leases of one group.
	sqlAckHeldGroups = `SELECT {schema}transport_ack_held_groups(` +
		`$1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::timestamptz, $6::text)`
	// sqlNackHeld is sent by QueueNackHeld.
	sqlNackHeld = `SELECT {schema}transport_nack_held($1::text, $2::text, $3::timestamptz, $4::text)`
	// sqlForget is sent by Forget.
	sqlForget = `SELECT {schema}transport_flow_forget($1::text[], $2::timestamptz, $3::text)`
	// sqlRelease is sent by release, for claims whose answer was lost.
	sqlRelease = `SELECT {schema}transport_release($1::text[], $2::text)`
)

// sqlQueueStats is the gauges' sample (transport.StatsBackend): per priority, the waiting
// messages and the creation time of the earliest published. It reads the whole queue, at a low
// rate.
const sqlQueueStats = `SELECT q.priority, q.depth,
	(SELECT (m.event::json->>'created_at')::timestamptz FROM {schema}transport_messages m WHERE m.seq = q.first)
	FROM (SELECT g.priority, count(*) AS depth, min(m.seq) AS first
		FROM {schema}transport_messages m JOIN {schema}transport_groups g ON g.group_id = m.group_id
		GROUP BY g.priority) AS q
	ORDER BY q.priority`

// sqlExtend is sent by Extend: it moves the end of every lease whose token still holds its group,
// by the primary key.
const sqlExtend = `UPDATE {schema}transport_groups t SET lease_until = $3::timestamptz
	FROM unnest($1::text[], $2::text[]) AS x(group_id, token)
	WHERE t.group_id = x.group_id AND t.locked_by = x.token`

// sqlFlowState is sent by FlowState: a key's limits and its admitted and waiting groups, counted
// in the keyed groups' index.
const sqlFlowState = `SELECT x.concurrency, x.rate, x.per_us,
	(SELECT count(*) FROM {schema}transport_groups t WHERE t.flow_key = x.key AND t.flow_wait IS NULL),
	(SELECT count(*) FROM {schema}transport_groups t WHERE t.flow_key = x.key AND t.flow_wait IS NOT NULL)
	FROM {schema}transport_flow_keys x WHERE x.key = $1::text`
