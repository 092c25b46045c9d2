package pgtransport

// Every statement the transport sends, named after the method that sends it: each calls one of
// the functions of the migrations. {schema} stands for the schema's qualifier
// (pgdb.Expand); newStatements expands each under its name, and TestStatementsPairedByName
// checks the pairing. Every parameter is cast, so the statements also work unprepared (behind
// PgBouncer), when the server is not asked for their types.
const (
	// sqlPublish is sent by PublishBatch, PublishBatchTx and QueuePublish.
	sqlPublish = `SELECT {schema}transport_publish($1::text[], $2::text[], $3::int[], $4::text)`
	// sqlClaim is sent by ClaimBatch and ClaimBatchTx.
	sqlClaim = `SELECT r_group, r_priority, r_seq, r_event, r_key FROM {schema}transport_claim(` +
		`$1::timestamptz, $2::timestamptz, $3::text, $4::int, $5::int, $6::timestamptz, $7::text, $8::boolean)`
	// sqlAck is sent by AckBatch, AckBatchTx and QueueAck.
	sqlAck = `SELECT {schema}transport_ack($1::text[], $2::bigint[], $3::text[], $4::timestamptz, $5::text)`
	// sqlNack is sent by Nack, NackTx and QueueNack.
	sqlNack = `SELECT {schema}transport_nack($1::text, $2::text, $3::timestamptz, $4::text)`
	// sqlRelease is sent by release, for claims whose answer was lost.
	sqlRelease = `SELECT {schema}transport_release($1::text[], $2::text)`
)
