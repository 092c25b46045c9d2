package sqliteturn

import "database/sql"

// Every statement this package sends is a constant below, named sql + the Backend method that
// sends it (and a suffix when the method sends more than one); a fragment shared by several
// statements has no sql prefix. The Backend sends each through its field of statements (below),
// prepared once. sql_test.go pairs every constant with its field and with the method it is named
// after, and prepares each one, by name, against a migrated file.
//
// Every write runs in a BEGIN IMMEDIATE transaction: it holds the file's write lock from its
// first statement, so no other writer, in this process or another, moves a row between a
// statement and the one after it. A compare-and-swap is therefore an UPDATE carrying the state it
// expects in its WHERE clause, and when it matches nothing a plain SELECT in the same transaction
// tells ErrNotFound from ErrConflict from an accepted repeat.

// Conversations, turns and their phase markers.

const sqlLoadConversation = `
SELECT created_at, metadata FROM turn_conversations WHERE account_id = ?1 AND conversation_id = ?2`

// The newest limit conversations, returned oldest first; turn_conversations_by_created serves
// both orders.
const sqlListConversations = `
SELECT conversation_id, created_at, metadata FROM (
    SELECT conversation_id, created_at, metadata FROM turn_conversations
    WHERE account_id = ?1
    ORDER BY created_at DESC, conversation_id DESC
    LIMIT ?2)
ORDER BY created_at, conversation_id`

const sqlCreateConversation = `
INSERT INTO turn_conversations (account_id, conversation_id, created_at, metadata) VALUES (?1, ?2, ?3, ?4)`

// The turn is inserted only if the conversation exists for the account, so a foreign
// conversation inserts nothing (NotFound) rather than failing on the foreign key.
const sqlAppendUserTurn = `
INSERT INTO turn_turns (account_id, turn_id, conversation_id, received_at, user_turn)
SELECT ?1, ?2, ?3, ?4, ?5
WHERE EXISTS (SELECT 1 FROM turn_conversations WHERE account_id = ?1 AND conversation_id = ?3)`

const sqlAppendUserTurnPhase = `
INSERT INTO turn_phases (account_id, turn_id, conversation_id, phase, updated_at)
VALUES (?1, ?2, ?3, 'received', ?4)`

// The assistant turn is attached only to an unanswered turn of the same conversation.
const sqlAppendAssistantTurn = `
UPDATE turn_turns SET assistant_turn = ?4
WHERE account_id = ?1 AND turn_id = ?2 AND conversation_id = ?3 AND assistant_turn IS NULL`

// When the attachment matched nothing: the stored turn's conversation (no row for no turn).
const sqlAppendAssistantTurnStored = `
SELECT conversation_id FROM turn_turns WHERE account_id = ?1 AND turn_id = ?2`

const sqlLoadTurn = `
SELECT t.user_turn, t.received_at, t.assistant_turn, p.phase
FROM turn_turns t JOIN turn_phases p ON p.account_id = t.account_id AND p.turn_id = t.turn_id
WHERE t.account_id = ?1 AND t.turn_id = ?2`

// The conversation drives the query, so a conversation that is not the account's gives no row at
// all (NotFound) while one without turns gives a single row of NULLs.
const sqlLoadRecentTurns = `
SELECT r.user_turn, r.received_at, r.assistant_turn, r.phase
FROM turn_conversations c
LEFT JOIN (
    SELECT t.account_id, t.conversation_id, t.turn_id, t.user_turn, t.received_at, t.assistant_turn, p.phase
    FROM turn_turns t JOIN turn_phases p ON p.account_id = t.account_id AND p.turn_id = t.turn_id
    WHERE t.account_id = ?1 AND t.conversation_id = ?2
    ORDER BY t.received_at DESC, t.turn_id DESC
    LIMIT ?3) r ON r.account_id = c.account_id AND r.conversation_id = c.conversation_id
WHERE c.account_id = ?1 AND c.conversation_id = ?2
ORDER BY r.received_at, r.turn_id`

const sqlTurnPhase = `
SELECT conversation_id, phase, updated_at FROM turn_phases WHERE account_id = ?1 AND turn_id = ?2`

// A terminal phase is never left, but setting it again is a retried write and is accepted (its
// updated_at refreshed): both rules are in the WHERE clause.
const sqlSetTurnPhase = `
UPDATE turn_phases SET phase = ?3, updated_at = ?4
WHERE account_id = ?1 AND turn_id = ?2 AND (phase = ?3 OR phase NOT IN ('delivered', 'failed'))
RETURNING conversation_id`

// When the marker did not move: does the turn exist at all?
const sqlSetTurnPhaseExists = `
SELECT EXISTS (SELECT 1 FROM turn_phases WHERE account_id = ?1 AND turn_id = ?2)`

// Unfinished turns across one account or all of them, oldest first. The partial index on
// unfinished phases keeps this to the turns in flight.
const sqlListUnfinishedTurns = `
SELECT p.account_id, p.conversation_id, p.turn_id, p.phase, p.updated_at
FROM turn_phases p JOIN turn_turns t ON t.account_id = p.account_id AND t.turn_id = p.turn_id
WHERE p.phase NOT IN ('delivered', 'failed') AND (?1 = '' OR p.account_id = ?1)
ORDER BY t.received_at, p.turn_id, p.account_id
LIMIT ?2`

// Interactions (cards).

// The interaction document is the card as created and is never rewritten; the lifecycle columns
// own everything that moves, and a read overlays them on the document.
const interactionColumns = `interaction, status, resolved_at, resolved_option_id, resolved_by_turn,
    resolution_event_ids, failure_code, invalidation, created_at`

const sqlLoadInteraction = `
SELECT ` + interactionColumns + ` FROM turn_interactions WHERE account_id = ?1 AND interaction_id = ?2`

// The cards a turn created or answered: each half walks an index of its own (turn_interactions_by_*_turn; the
// creating turn lives in the card's document), and the union keeps a card that is both once.
const sqlInteractionsForTurn = `
SELECT ` + interactionColumns + ` FROM turn_interactions
WHERE account_id = ?1 AND interaction_id IN (
    SELECT interaction_id FROM turn_interactions
    WHERE account_id = ?1 AND json_extract(interaction, '$.created_by_turn') = ?2
    UNION
    SELECT interaction_id FROM turn_interactions WHERE account_id = ?1 AND resolved_by_turn = ?2)
ORDER BY created_at, interaction_id`

const sqlListOpenForConversation = `
SELECT ` + interactionColumns + ` FROM turn_interactions
WHERE account_id = ?1 AND conversation_id = ?2 AND status IN ('active', 'resolving')
ORDER BY created_at, interaction_id`

const sqlListOpenForCase = `
SELECT ` + interactionColumns + ` FROM turn_interactions
WHERE account_id = ?1 AND workflow_key = ?2 AND case_id = ?3 AND status IN ('active', 'resolving')
ORDER BY created_at, interaction_id`

// A revision-independent card is bound to no revision, so it never answers for one.
const sqlBlockingAnsweredAt = `
SELECT EXISTS (
    SELECT 1 FROM turn_interactions
    WHERE account_id = ?1 AND workflow_key = ?2 AND case_id = ?3 AND case_revision = ?4
      AND blocking AND NOT revision_independent AND status IN ('resolved', 'declined', 'dismissed'))`

// Insert relies on the partial unique index for the blocking slot: a second open blocking card
// of the case fails on it, whoever wrote the first.
const sqlInsertInteraction = `
INSERT INTO turn_interactions (account_id, interaction_id, conversation_id, workflow_key, case_id,
    case_revision, kind, blocking, revision_independent, payload_hash, interaction, status,
    created_at, expires_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 'active', ?12, ?13)`

// The replacing insert first supersedes the case's active blocking occupant, then inserts
// (sqlInsertInteraction), in one transaction. A resolving occupant is never touched, so its slot
// holds and the insert fails on the blocking index: an answer being processed is never replaced.
const sqlInsertReplacingBlocking = `
UPDATE turn_interactions SET status = 'invalidated', invalidation = ?4
WHERE account_id = ?1 AND workflow_key = ?2 AND case_id = ?3 AND blocking AND status = 'active'
RETURNING interaction_id`

// Only an active card begins resolving, and only when the caller expected it active.
const sqlBeginResolution = `
UPDATE turn_interactions
SET status = 'resolving', resolved_option_id = ?3, resolved_at = ?4, resolved_by_turn = ?5
WHERE account_id = ?1 AND interaction_id = ?2 AND status = 'active'
RETURNING ` + interactionColumns

const sqlFinishResolutionResolved = `
UPDATE turn_interactions SET status = 'resolved', resolution_event_ids = ?3, failure_code = NULL
WHERE account_id = ?1 AND interaction_id = ?2 AND status = 'resolving'`

const sqlFinishResolutionFailed = `
UPDATE turn_interactions SET status = 'failed', failure_code = ?3, resolution_event_ids = '[]'
WHERE account_id = ?1 AND interaction_id = ?2 AND status = 'resolving'`

const sqlFinishResolutionRestoreActive = `
UPDATE turn_interactions
SET status = 'active', resolution_event_ids = '[]', failure_code = NULL, resolved_by_turn = NULL,
    resolved_option_id = NULL, resolved_at = NULL
WHERE account_id = ?1 AND interaction_id = ?2 AND status = 'resolving'`

const sqlInvalidateForCase = `
UPDATE turn_interactions SET status = 'invalidated', invalidation = ?5
WHERE account_id = ?1 AND workflow_key = ?2 AND case_id = ?3 AND status = 'active'
  AND NOT revision_independent AND case_revision <> ?4
RETURNING interaction_id, created_at`

const sqlInvalidateCaseCards = `
UPDATE turn_interactions SET status = 'invalidated', invalidation = ?4
WHERE account_id = ?1 AND workflow_key = ?2 AND case_id = ?3 AND status = 'active'
RETURNING interaction_id, created_at`

// The expiry sweep crosses tenants; nothing but the status is recorded.
const sqlExpireDue = `
UPDATE turn_interactions SET status = 'expired'
WHERE status = 'active' AND expires_at IS NOT NULL AND expires_at <= ?1
RETURNING account_id, interaction_id`

// The command journal.

const journalColumns = `command_id, account_id, idempotency_key, turn_id, workflow_key, case_id,
    expected_revision, command_type, command_payload, origin, status, result, created_at, completed_at`

const sqlLoadCommand = `
SELECT ` + journalColumns + ` FROM turn_journal WHERE account_id = ?1 AND command_id = ?2`

const sqlCommandsForTurn = `
SELECT ` + journalColumns + ` FROM turn_journal WHERE account_id = ?1 AND turn_id = ?2
ORDER BY created_at, command_id`

const sqlPendingForTurn = `
SELECT ` + journalColumns + ` FROM turn_journal
WHERE account_id = ?1 AND turn_id = ?2 AND status IN ('pending', 'executing')
ORDER BY created_at, command_id`

// Admission reads the key first and inserts only when it is free, under the write lock, so no
// other admission can take the key in between: exactly one Fresh per key. A command id clash
// under another key fails on the primary key (ErrConflict).
const sqlBeginCommand = `
SELECT ` + journalColumns + ` FROM turn_journal WHERE account_id = ?1 AND idempotency_key = ?2`

const sqlBeginCommandInsert = `
INSERT INTO turn_journal (account_id, command_id, idempotency_key, turn_id, workflow_key, case_id,
    expected_revision, command_type, command_payload, origin, status, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)`

const sqlMarkExecuting = `
UPDATE turn_journal SET status = 'executing'
WHERE account_id = ?1 AND command_id = ?2 AND status IN ('pending', 'awaiting_confirmation')`

// The status an entry stands in, for a rule whose UPDATE matched nothing.
const sqlMarkExecutingStatus = `
SELECT status FROM turn_journal WHERE account_id = ?1 AND command_id = ?2`

// The journal's transition table is in the WHERE clause: the entry moves only from a status that
// may reach the outcome's (?6, a JSON array of statuses).
const sqlCompleteCommand = `
UPDATE turn_journal SET status = ?3, result = ?4, completed_at = ?5
WHERE account_id = ?1 AND command_id = ?2 AND status IN (SELECT value FROM json_each(?6))`

const sqlCompleteCommandStored = `
SELECT status, result FROM turn_journal WHERE account_id = ?1 AND command_id = ?2`

// The event journal.

const eventColumns = `sequence, event_id, account_id, workflow_key, case_id, case_revision, command_id,
    event_type, payload, occurred_at, redacted_at, redaction_authority`

// One row per event, in batch order, inside the append's transaction: the sequence column hands
// out values in that order, and a duplicate id (stored, or earlier in the batch) fails the
// unique index and the whole transaction with it.
const sqlAppendEvents = `
INSERT INTO turn_events (account_id, event_id, workflow_key, case_id, case_revision, command_id,
    event_type, payload, occurred_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`

const sqlListSince = `
SELECT ` + eventColumns + ` FROM turn_events
WHERE account_id = ?1 AND workflow_key = ?2 AND case_id = ?3 AND case_revision > ?4
ORDER BY sequence
LIMIT ?5`

// The account is filtered in SQL, on the (account_id, sequence) index, so other tenants' events
// neither consume the limit nor cost a read.
const sqlReadFrom = `
SELECT ` + eventColumns + ` FROM turn_events
WHERE account_id = ?1 AND sequence > ?2
ORDER BY sequence
LIMIT ?3`

// The ids come as a JSON array of text.
const sqlLoadEvents = `
SELECT ` + eventColumns + ` FROM turn_events
WHERE account_id = ?1 AND event_id IN (SELECT value FROM json_each(?2))`

const sqlCountEvents = `
SELECT count(*) FROM turn_events WHERE account_id = ?1 AND workflow_key = ?2 AND case_id = ?3`

// Erasure is this one UPDATE. It writes the payload and the two audit columns and nothing else,
// so no erasure can move or drop an event. COALESCE keeps the first record: who erased what is
// not something a retry may rewrite. The WHERE clause is account-scoped, so another tenant's id
// updates nothing and is NotFound.
const sqlRedactPayload = `
UPDATE turn_events
SET payload = 'null', redacted_at = COALESCE(redacted_at, ?4), redaction_authority = COALESCE(redaction_authority, ?3)
WHERE account_id = ?1 AND event_id = ?2
RETURNING redacted_at, redaction_authority`

// The outbox.

const outboxColumns = `outbox_id, command_id, destination, payload, idempotency_key, status, attempt_count,
    next_attempt_at, created_at, completed_at, claim_worker_id, claim_taken_at, last_failure, remote_ref`

const sqlLoadOutbox = `SELECT ` + outboxColumns + ` FROM turn_outbox WHERE outbox_id = ?1`

const sqlOutboxForCommand = `
SELECT ` + outboxColumns + ` FROM turn_outbox WHERE command_id = ?1 ORDER BY created_at, outbox_id`

const sqlEnqueue = `
INSERT INTO turn_outbox (outbox_id, command_id, destination, payload, idempotency_key, status,
    attempt_count, next_attempt_at, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?7, ?8)`

// The claim selects and moves the due rows in one statement of a write transaction: the file
// has one writer at a time, so a row another dispatcher (of this process or another) has moved
// to dispatching is no longer pending when this one runs.
const sqlClaimDue = `
UPDATE turn_outbox
SET status = 'dispatching', attempt_count = attempt_count + 1, claim_worker_id = ?3, claim_taken_at = ?1
WHERE outbox_id IN (
    SELECT outbox_id FROM turn_outbox
    WHERE status = 'pending' AND (next_attempt_at IS NULL OR next_attempt_at <= ?1)
    ORDER BY created_at, outbox_id
    LIMIT ?2)
RETURNING ` + outboxColumns

// Every settlement is one UPDATE carrying the statuses it may leave in its WHERE clause; when it
// matches nothing, sqlLoadOutboxStatus gives the status the row stands in, which is all the
// rule needs. A refused settlement changes nothing at all.
const sqlMarkCompleted = `
UPDATE turn_outbox SET status = 'completed', completed_at = ?2, claim_worker_id = NULL, claim_taken_at = NULL
WHERE outbox_id = ?1 AND status IN ('dispatching', 'outcome_unknown')`

const sqlLoadOutboxStatus = `SELECT status FROM turn_outbox WHERE outbox_id = ?1`

const sqlReschedule = `
UPDATE turn_outbox
SET status = 'pending', next_attempt_at = ?2, last_failure = COALESCE(?3, last_failure),
    claim_worker_id = NULL, claim_taken_at = NULL
WHERE outbox_id = ?1 AND status IN ('pending', 'dispatching', 'outcome_unknown')`

// A definite failure settles the row. Repeating it on a failed row is accepted and changes
// nothing, the first reason included: a retried report must not rewrite what the dispatcher saw
// first.
const sqlMarkFailed = `
UPDATE turn_outbox
SET status = 'failed', completed_at = ?3, last_failure = ?2, claim_worker_id = NULL, claim_taken_at = NULL
WHERE outbox_id = ?1 AND status IN ('dispatching', 'outcome_unknown')`

const sqlMarkOutcomeUnknown = `
UPDATE turn_outbox SET status = 'outcome_unknown', remote_ref = ?2, claim_worker_id = NULL, claim_taken_at = NULL
WHERE outbox_id = ?1 AND status = 'dispatching'`

// A repeat on an outcome_unknown row only fills a missing remote reference.
const sqlMarkOutcomeUnknownRepeat = `
UPDATE turn_outbox SET remote_ref = COALESCE(remote_ref, ?2) WHERE outbox_id = ?1 AND status = 'outcome_unknown'`

const sqlReleaseExpiredClaims = `
UPDATE turn_outbox
SET status = 'pending', next_attempt_at = NULL, claim_worker_id = NULL, claim_taken_at = NULL
WHERE status = 'dispatching' AND claim_taken_at < ?1
RETURNING outbox_id`

// Replay records.

// The record is stored whole as a document; the columns beside it are what the store reads.
const sqlPutReplay = `
INSERT INTO turn_replays (account_id, turn_id, conversation_id, phase, recorded_at, record)
VALUES (?1, ?2, ?3, ?4, ?5, ?6)
ON CONFLICT (account_id, turn_id) DO UPDATE
SET conversation_id = excluded.conversation_id, phase = excluded.phase,
    recorded_at = excluded.recorded_at, record = excluded.record`

const sqlLoadReplay = `SELECT record FROM turn_replays WHERE account_id = ?1 AND turn_id = ?2`

// The newest limit records, returned oldest first.
const sqlReplaysForConversation = `
SELECT record FROM (
    SELECT record, recorded_at, turn_id FROM turn_replays
    WHERE account_id = ?1 AND conversation_id = ?2
    ORDER BY recorded_at DESC, turn_id DESC
    LIMIT ?3)
ORDER BY recorded_at, turn_id`

// statements holds every statement above, prepared: the field X is sqlX, filled once by name
// (sqlitedb.PrepareByName), so no field can run another's text. The Backend holds two sets: its
// writes' on the DB's writer connection (sqlitedb.DB.PrepareWrites), run only inside the DB's
// write transactions (sqlitedb.DB.Write), and its reads' on the reader pool, where database/sql
// prepares each again on every other connection the first time it runs there. Both sets hold
// every statement: a write transaction reads too (the status a refused UPDATE found), and
// preparing a write on the read-only pool costs nothing until it runs, which it never does.
// sql_test.go pairs every constant with its field.
type statements struct {
	// Conversations, turns and their phase markers.
	LoadConversation, ListConversations, CreateConversation                             *sql.Stmt
	AppendUserTurn, AppendUserTurnPhase, AppendAssistantTurn, AppendAssistantTurnStored *sql.Stmt
	LoadTurn, LoadRecentTurns, TurnPhase, SetTurnPhase, SetTurnPhaseExists              *sql.Stmt
	ListUnfinishedTurns                                                                 *sql.Stmt

	// Interaction cards.
	LoadInteraction, InteractionsForTurn, ListOpenForConversation, ListOpenForCase  *sql.Stmt
	BlockingAnsweredAt, InsertInteraction, InsertReplacingBlocking, BeginResolution *sql.Stmt
	FinishResolutionResolved, FinishResolutionFailed, FinishResolutionRestoreActive *sql.Stmt
	InvalidateForCase, InvalidateCaseCards, ExpireDue                               *sql.Stmt

	// The command journal.
	LoadCommand, CommandsForTurn, PendingForTurn, BeginCommand, BeginCommandInsert *sql.Stmt
	MarkExecuting, MarkExecutingStatus, CompleteCommand, CompleteCommandStored     *sql.Stmt

	// The event journal.
	AppendEvents, ListSince, ReadFrom, LoadEvents, CountEvents, RedactPayload *sql.Stmt

	// The outbox.
	LoadOutbox, OutboxForCommand, Enqueue, ClaimDue, MarkCompleted, LoadOutboxStatus *sql.Stmt
	Reschedule, MarkFailed, MarkOutcomeUnknown, MarkOutcomeUnknownRepeat             *sql.Stmt
	ReleaseExpiredClaims                                                             *sql.Stmt

	// Replay records.
	PutReplay, LoadReplay, ReplaysForConversation *sql.Stmt
}

// statementTexts names every statement for sqlitedb.PrepareByName: the constant sqlX under "sqlX".
var statementTexts = map[string]string{
	"sqlLoadConversation":              sqlLoadConversation,
	"sqlListConversations":             sqlListConversations,
	"sqlCreateConversation":            sqlCreateConversation,
	"sqlAppendUserTurn":                sqlAppendUserTurn,
	"sqlAppendUserTurnPhase":           sqlAppendUserTurnPhase,
	"sqlAppendAssistantTurn":           sqlAppendAssistantTurn,
	"sqlAppendAssistantTurnStored":     sqlAppendAssistantTurnStored,
	"sqlLoadTurn":                      sqlLoadTurn,
	"sqlLoadRecentTurns":               sqlLoadRecentTurns,
	"sqlTurnPhase":                     sqlTurnPhase,
	"sqlSetTurnPhase":                  sqlSetTurnPhase,
	"sqlSetTurnPhaseExists":            sqlSetTurnPhaseExists,
	"sqlListUnfinishedTurns":           sqlListUnfinishedTurns,
	"sqlLoadInteraction":               sqlLoadInteraction,
	"sqlInteractionsForTurn":           sqlInteractionsForTurn,
	"sqlListOpenForConversation":       sqlListOpenForConversation,
	"sqlListOpenForCase":               sqlListOpenForCase,
	"sqlBlockingAnsweredAt":            sqlBlockingAnsweredAt,
	"sqlInsertInteraction":             sqlInsertInteraction,
	"sqlInsertReplacingBlocking":       sqlInsertReplacingBlocking,
	"sqlBeginResolution":               sqlBeginResolution,
	"sqlFinishResolutionResolved":      sqlFinishResolutionResolved,
	"sqlFinishResolutionFailed":        sqlFinishResolutionFailed,
	"sqlFinishResolutionRestoreActive": sqlFinishResolutionRestoreActive,
	"sqlInvalidateForCase":             sqlInvalidateForCase,
	"sqlInvalidateCaseCards":           sqlInvalidateCaseCards,
	"sqlExpireDue":                     sqlExpireDue,
	"sqlLoadCommand":                   sqlLoadCommand,
	"sqlCommandsForTurn":               sqlCommandsForTurn,
	"sqlPendingForTurn":                sqlPendingForTurn,
	"sqlBeginCommand":                  sqlBeginCommand,
	"sqlBeginCommandInsert":            sqlBeginCommandInsert,
	"sqlMarkExecuting":                 sqlMarkExecuting,
	"sqlMarkExecutingStatus":           sqlMarkExecutingStatus,
	"sqlCompleteCommand":               sqlCompleteCommand,
	"sqlCompleteCommandStored":         sqlCompleteCommandStored,
	"sqlAppendEvents":                  sqlAppendEvents,
	"sqlListSince":                     sqlListSince,
	"sqlReadFrom":                      sqlReadFrom,
	"sqlLoadEvents":                    sqlLoadEvents,
	"sqlCountEvents":                   sqlCountEvents,
	"sqlRedactPayload":                 sqlRedactPayload,
	"sqlLoadOutbox":                    sqlLoadOutbox,
	"sqlOutboxForCommand":              sqlOutboxForCommand,
	"sqlEnqueue":                       sqlEnqueue,
	"sqlClaimDue":                      sqlClaimDue,
	"sqlMarkCompleted":                 sqlMarkCompleted,
	"sqlLoadOutboxStatus":              sqlLoadOutboxStatus,
	"sqlReschedule":                    sqlReschedule,
	"sqlMarkFailed":                    sqlMarkFailed,
	"sqlMarkOutcomeUnknown":            sqlMarkOutcomeUnknown,
	"sqlMarkOutcomeUnknownRepeat":      sqlMarkOutcomeUnknownRepeat,
	"sqlReleaseExpiredClaims":          sqlReleaseExpiredClaims,
	"sqlPutReplay":                     sqlPutReplay,
	"sqlLoadReplay":                    sqlLoadReplay,
	"sqlReplaysForConversation":        sqlReplaysForConversation,
}
