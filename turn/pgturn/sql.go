package pgturn

// Every statement this package sends is a constant below, named sql + the Backend method that
// sends it (and a suffix when the method sends more than one); a fragment shared by several
// statements has no sql prefix. Each names its tables with the {schema} placeholder. The backend
// holds its statements in the struct statements, field X filled once in New from constant sqlX
// expanded with the schema (pgdb.ExpandByName), so no session state (search_path) is needed and the
// backend works behind PgBouncer in transaction mode. sql_test.go pairs every constant with its
// field and with the method it is named after, and prepares each statement, by name, against a
// migrated schema.

// Conversations, turns and their phase markers.

const sqlLoadConversation = `
SELECT created_at, metadata FROM {schema}turn_conversations
WHERE account_id = $1 AND conversation_id = $2`

// The newest limit conversations, returned oldest first; turn_conversations_by_created serves
// both orders.
const sqlListConversations = `
SELECT conversation_id, created_at, metadata FROM (
    SELECT conversation_id, created_at, metadata FROM {schema}turn_conversations
    WHERE account_id = $1
    ORDER BY created_at DESC, conversation_id DESC
    LIMIT $2) newest
ORDER BY created_at, conversation_id`

const sqlCreateConversation = `
INSERT INTO {schema}turn_conversations (account_id, conversation_id, created_at, metadata)
VALUES ($1, $2, $3, $4)`

// The turn and its phase marker go in together, in one statement: the marker's foreign key
// sees the turn inserted by the CTE, and the turn is inserted only if the conversation exists
// for the account (so a foreign conversation is NotFound, not a foreign-key error).
const sqlAppendUserTurn = `
WITH t AS (
    INSERT INTO {schema}turn_turns (account_id, turn_id, conversation_id, received_at, user_turn)
    SELECT $1, $2, $3, $4, $5
    WHERE EXISTS (SELECT 1 FROM {schema}turn_conversations WHERE account_id = $1 AND conversation_id = $3)
    RETURNING account_id, turn_id, conversation_id)
INSERT INTO {schema}turn_phases (account_id, turn_id, conversation_id, phase, updated_at)
SELECT account_id, turn_id, conversation_id, 'received', $6 FROM t`

// The assistant turn is attached only to an unanswered turn of the same conversation; the
// statement also returns the stored turn's conversation (NULL for no turn), which tells the three
// refusals apart.
const sqlAppendAssistantTurn = `
WITH answered AS (
    UPDATE {schema}turn_turns SET assistant_turn = $4
    WHERE account_id = $1 AND turn_id = $2 AND conversation_id = $3 AND assistant_turn IS NULL
    RETURNING 1)
SELECT EXISTS (SELECT 1 FROM answered),
    (SELECT conversation_id FROM {schema}turn_turns WHERE account_id = $1 AND turn_id = $2)`

const sqlLoadTurn = `
SELECT t.user_turn, t.received_at, t.assistant_turn, p.phase
FROM {schema}turn_turns t JOIN {schema}turn_phases p USING (account_id, turn_id)
WHERE t.account_id = $1 AND t.turn_id = $2`

// The conversation drives the query, so a conversation that is not the account's gives no row at
// all (NotFound) while one without turns gives a single row of NULLs.
const sqlLoadRecentTurns = `
SELECT t.user_turn, t.received_at, t.assistant_turn, t.phase
FROM {schema}turn_conversations c
LEFT JOIN LATERAL (
    SELECT t.*, p.phase
    FROM {schema}turn_turns t JOIN {schema}turn_phases p USING (account_id, turn_id)
    WHERE t.account_id = c.account_id AND t.conversation_id = c.conversation_id
    ORDER BY t.received_at DESC, t.turn_id DESC
    LIMIT $3) t ON true
WHERE c.account_id = $1 AND c.conversation_id = $2
ORDER BY t.received_at, t.turn_id`

const sqlTurnPhase = `
SELECT conversation_id, phase, updated_at FROM {schema}turn_phases
WHERE account_id = $1 AND turn_id = $2`

// A terminal phase is never left, but setting it again is a retried write and is accepted (its
// updated_at refreshed): both rules are in the WHERE clause. The second branch answers whether
// the turn exists when the marker did not move.
const sqlSetTurnPhase = `
WITH moved AS (
    UPDATE {schema}turn_phases SET phase = $3, updated_at = $4
    WHERE account_id = $1 AND turn_id = $2 AND (phase = $3 OR phase NOT IN ('delivered', 'failed'))
    RETURNING conversation_id)
SELECT true, conversation_id FROM moved
UNION ALL
SELECT false, conversation_id FROM {schema}turn_phases
WHERE account_id = $1 AND turn_id = $2 AND NOT EXISTS (SELECT 1 FROM moved)`

// Unfinished turns across one account or all of them, oldest first. The partial index on
// unfinished phases keeps this to the turns in flight.
const sqlListUnfinishedTurns = `
SELECT p.account_id, p.conversation_id, p.turn_id, p.phase, p.updated_at
FROM {schema}turn_phases p JOIN {schema}turn_turns t USING (account_id, turn_id)
WHERE p.phase NOT IN ('delivered', 'failed') AND ($1 = '' OR p.account_id = $1)
ORDER BY t.received_at, p.turn_id, p.account_id
LIMIT $2`

// Interactions (cards).

// The interaction document is the card as created and is never rewritten; the lifecycle columns
// own everything that moves, and a read overlays them on the document.
const interactionColumns = `interaction, status, resolved_at, resolved_option_id, resolved_by_turn,
    resolution_event_ids, failure_code, invalidation, created_at`

const sqlLoadInteraction = `
SELECT ` + interactionColumns + ` FROM {schema}turn_interactions
WHERE account_id = $1 AND interaction_id = $2`

// The cards a turn created or answered: each half walks an index of its own (turn_interactions_by_*_turn; the
// creating turn lives in the card's document, as text), and the union keeps a card that is both
// once.
const sqlInteractionsForTurn = `
SELECT ` + interactionColumns + ` FROM {schema}turn_interactions
WHERE account_id = $1 AND interaction_id IN (
    SELECT interaction_id FROM {schema}turn_interactions
    WHERE account_id = $1 AND (interaction->>'created_by_turn') = $2
    UNION
    SELECT interaction_id FROM {schema}turn_interactions WHERE account_id = $1 AND resolved_by_turn = $3)
ORDER BY created_at, interaction_id`

const sqlListOpenForConversation = `
SELECT ` + interactionColumns + ` FROM {schema}turn_interactions
WHERE account_id = $1 AND conversation_id = $2 AND status IN ('active', 'resolving')
ORDER BY created_at, interaction_id`

const sqlListOpenForCase = `
SELECT ` + interactionColumns + ` FROM {schema}turn_interactions
WHERE account_id = $1 AND workflow_key = $2 AND case_id = $3 AND status IN ('active', 'resolving')
ORDER BY created_at, interaction_id`

// A revision-independent card is bound to no revision, so it never answers for one.
const sqlBlockingAnsweredAt = `
SELECT EXISTS (
    SELECT 1 FROM {schema}turn_interactions
    WHERE account_id = $1 AND workflow_key = $2 AND case_id = $3 AND case_revision = $4
      AND blocking AND NOT revision_independent AND status IN ('resolved', 'declined', 'dismissed'))`

// Insert relies on the partial unique index for the blocking slot: two concurrent inserts cannot
// both pass it, whatever either of them read before.
const sqlInsertInteraction = `
INSERT INTO {schema}turn_interactions (account_id, interaction_id, conversation_id, workflow_key,
    case_id, case_revision, kind, blocking, revision_independent, payload_hash, interaction, status,
    created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'active', $12, $13)`

// The replacing insert supersedes the case's active blocking occupant and takes its slot in one
// statement. The INSERT reads from the retiring UPDATE, so the occupant is retired before the new
// row meets the blocking index (which does not count a row this transaction has just retired).
// The UPDATE takes the occupant's row lock, so two replacements of one card serialise: the second
// re-reads the occupant as no longer active, supersedes nothing, and its INSERT then fails on the
// blocking index. A resolving occupant is never touched, so its slot holds and the INSERT fails
// too: an answer being processed is never replaced.
const sqlInsertReplacingBlocking = `
WITH superseded AS (
    UPDATE {schema}turn_interactions SET status = 'invalidated', invalidation = $14
    WHERE account_id = $1 AND workflow_key = $4 AND case_id = $5 AND blocking AND status = 'active'
    RETURNING interaction_id),
retired AS (SELECT array_agg(interaction_id) AS ids FROM superseded)
INSERT INTO {schema}turn_interactions (account_id, interaction_id, conversation_id, workflow_key,
    case_id, case_revision, kind, blocking, revision_independent, payload_hash, interaction, status,
    created_at, expires_at)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'active', $12, $13 FROM retired
RETURNING (SELECT ids FROM retired)`

// Only an active card begins resolving, and only when the caller expected it active ($6); the
// second branch returns the card as it stood when it did not move.
const sqlBeginResolution = `
WITH begun AS (
    UPDATE {schema}turn_interactions
    SET status = 'resolving', resolved_option_id = $3, resolved_at = $4, resolved_by_turn = $5
    WHERE account_id = $1 AND interaction_id = $2 AND status = 'active' AND $6::boolean
    RETURNING ` + interactionColumns + `)
SELECT true, ` + interactionColumns + ` FROM begun
UNION ALL
SELECT false, ` + interactionColumns + ` FROM {schema}turn_interactions
WHERE account_id = $1 AND interaction_id = $2 AND NOT EXISTS (SELECT 1 FROM begun)`

// Each settlement moves a resolving card; when it matches nothing, the second branch returns the
// card as it stood, for the rule to tell a repeat from a conflict.
const finishTail = `
SELECT true, ` + interactionColumns + ` FROM settled
UNION ALL
SELECT false, ` + interactionColumns + ` FROM {schema}turn_interactions
WHERE account_id = $1 AND interaction_id = $2 AND NOT EXISTS (SELECT 1 FROM settled)`

const sqlFinishResolutionResolved = `
WITH settled AS (
    UPDATE {schema}turn_interactions
    SET status = 'resolved', resolution_event_ids = $3::uuid[], failure_code = NULL
    WHERE account_id = $1 AND interaction_id = $2 AND status = 'resolving'
    RETURNING ` + interactionColumns + `)` + finishTail

const sqlFinishResolutionFailed = `
WITH settled AS (
    UPDATE {schema}turn_interactions
    SET status = 'failed', failure_code = $3, resolution_event_ids = '{}'
    WHERE account_id = $1 AND interaction_id = $2 AND status = 'resolving'
    RETURNING ` + interactionColumns + `)` + finishTail

const sqlFinishResolutionRestoreActive = `
WITH settled AS (
    UPDATE {schema}turn_interactions
    SET status = 'active', resolution_event_ids = '{}', failure_code = NULL, resolved_by_turn = NULL,
        resolved_option_id = NULL, resolved_at = NULL
    WHERE account_id = $1 AND interaction_id = $2 AND status = 'resolving'
    RETURNING ` + interactionColumns + `)` + finishTail

const sqlInvalidateForCase = `
UPDATE {schema}turn_interactions SET status = 'invalidated', invalidation = $5
WHERE account_id = $1 AND workflow_key = $2 AND case_id = $3 AND status = 'active'
  AND NOT revision_independent AND case_revision <> $4
RETURNING interaction_id, created_at`

const sqlInvalidateCaseCards = `
UPDATE {schema}turn_interactions SET status = 'invalidated', invalidation = $4
WHERE account_id = $1 AND workflow_key = $2 AND case_id = $3 AND status = 'active'
RETURNING interaction_id, created_at`

// The expiry sweep crosses tenants; nothing but the status is recorded.
const sqlExpireDue = `
UPDATE {schema}turn_interactions SET status = 'expired'
WHERE status = 'active' AND expires_at IS NOT NULL AND expires_at <= $1
RETURNING account_id, interaction_id`

// The command journal.

const journalColumns = `command_id, account_id, idempotency_key, turn_id, workflow_key, case_id,
    expected_revision, command_type, command_payload, origin, status, result, created_at, completed_at`

const sqlLoadCommand = `
SELECT ` + journalColumns + ` FROM {schema}turn_journal WHERE account_id = $1 AND command_id = $2`

const sqlCommandsForTurn = `
SELECT ` + journalColumns + ` FROM {schema}turn_journal
WHERE account_id = $1 AND turn_id = $2
ORDER BY created_at, command_id`

const sqlPendingForTurn = `
SELECT ` + journalColumns + ` FROM {schema}turn_journal
WHERE account_id = $1 AND turn_id = $2 AND status IN ('pending', 'executing')
ORDER BY created_at, command_id`

// Admission is one statement in the common cases. A new key inserts and returns the row (fresh);
// a known key inserts nothing (ON CONFLICT on the key's constraint, so a command id clash under
// another key still fails as a unique violation) and the second branch returns the stored row.
// A concurrent caller's insert of the same key makes this one wait for it and then do nothing;
// the second branch cannot see that row (it reads the statement's snapshot, taken before the
// wait), so an empty result is followed by a re-read.
const sqlBeginCommand = `
WITH fresh AS (
    INSERT INTO {schema}turn_journal (account_id, command_id, idempotency_key, turn_id, workflow_key,
        case_id, expected_revision, command_type, command_payload, origin, status, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
    ON CONFLICT ON CONSTRAINT turn_journal_idempotency_key DO NOTHING
    RETURNING ` + journalColumns + `)
SELECT true, * FROM fresh
UNION ALL
SELECT false, ` + journalColumns + ` FROM {schema}turn_journal
WHERE account_id = $1 AND idempotency_key = $3 AND NOT EXISTS (SELECT 1 FROM fresh)`

const sqlBeginCommandReread = `
SELECT false, ` + journalColumns + ` FROM {schema}turn_journal WHERE account_id = $1 AND idempotency_key = $2`

// A pending or awaiting entry starts executing; the statement also returns the status the entry
// had (NULL for none), for the rule when it did not move.
const sqlMarkExecuting = `
WITH moved AS (
    UPDATE {schema}turn_journal SET status = 'executing'
    WHERE account_id = $1 AND command_id = $2 AND status IN ('pending', 'awaiting_confirmation')
    RETURNING 1)
SELECT EXISTS (SELECT 1 FROM moved),
    (SELECT status FROM {schema}turn_journal WHERE account_id = $1 AND command_id = $2)`

// The journal's transition table is in the WHERE clause: the entry moves only from a status that
// may reach the outcome's. When it does not move, the second branch returns the entry as it stood
// (the statement's snapshot), which is all the rule needs to tell a repeat from a conflict.
const sqlCompleteCommand = `
WITH moved AS (
    UPDATE {schema}turn_journal SET status = $3, result = $4, completed_at = $5
    WHERE account_id = $1 AND command_id = $2 AND status = ANY($6::text[])
    RETURNING status, result)
SELECT true, status, result FROM moved
UNION ALL
SELECT false, status, result FROM {schema}turn_journal
WHERE account_id = $1 AND command_id = $2 AND NOT EXISTS (SELECT 1 FROM moved)`

// The event journal.

const eventColumns = `sequence, event_id, account_id, workflow_key, case_id, case_revision, command_id,
    event_type, payload, occurred_at, redacted_at, redaction_authority`

// A cursor is only safe if an account's events become visible in sequence order: were two
// transactions of one account to draw sequences 10 and 11 and commit 11 first, a reader could
// page past 11 and never see 10. So every append first takes a lock of its account, held until
// its transaction ends: the next append of the account draws its sequences only once the
// previous one is visible (PostgreSQL releases transaction locks after making the commit
// visible). Appends of different accounts do not wait for each other (but for hash collisions,
// which only cost a wait). The lock is taken before anything else the transaction writes, so it
// never waits while holding a row another append needs.
const sqlAppendEventsLock = `SELECT pg_advisory_xact_lock(` + appendLockClass + `, hashtext($1))`

// appendLockClass is the first key of the append locks: "turn" in ASCII, apart from the key
// migrations lock with.
const appendLockClass = "1953854062"

// The batch is one INSERT whose rows are produced in batch order (ORDER BY the ordinality), so
// the identity column hands out sequences in that order. A duplicate id, against a stored event
// or within the batch, violates the primary key and fails the statement whole.
const sqlAppendEvents = `
INSERT INTO {schema}turn_events (account_id, event_id, workflow_key, case_id, case_revision,
    command_id, event_type, payload, occurred_at)
SELECT $1, e.event_id, $2, $3, $4, $5, e.event_type, e.payload, e.occurred_at
FROM unnest($6::uuid[], $7::text[], $8::jsonb[], $9::timestamptz[])
    WITH ORDINALITY AS e(event_id, event_type, payload, occurred_at, position)
ORDER BY e.position`

const sqlListSince = `
SELECT ` + eventColumns + ` FROM {schema}turn_events
WHERE account_id = $1 AND workflow_key = $2 AND case_id = $3 AND case_revision > $4
ORDER BY sequence
LIMIT $5`

// The account is filtered in SQL, on the (account_id, sequence) index, so other tenants' events
// neither consume the limit nor cost a read.
const sqlReadFrom = `
SELECT ` + eventColumns + ` FROM {schema}turn_events
WHERE account_id = $1 AND sequence > $2
ORDER BY sequence
LIMIT $3`

const sqlLoadEvents = `
SELECT ` + eventColumns + ` FROM {schema}turn_events WHERE account_id = $1 AND event_id = ANY($2::uuid[])`

const sqlCountEvents = `
SELECT count(*) FROM {schema}turn_events WHERE account_id = $1 AND workflow_key = $2 AND case_id = $3`

// Erasure is this one UPDATE. It writes the payload and the two audit columns and nothing else,
// so no erasure can move or drop an event. COALESCE keeps the first record: who erased what is
// not something a retry may rewrite; under two concurrent requests the row lock orders them and
// the second returns the first one's record. The WHERE clause is account-scoped, so another
// tenant's id updates nothing and is NotFound.
const sqlRedactPayload = `
UPDATE {schema}turn_events
SET payload = 'null'::jsonb,
    redacted_at = COALESCE(redacted_at, $4),
    redaction_authority = COALESCE(redaction_authority, $3)
WHERE account_id = $1 AND event_id = $2
RETURNING redacted_at, redaction_authority`

// The outbox.

const outboxColumns = `outbox_id, command_id, destination, payload, idempotency_key, status, attempt_count,
    next_attempt_at, created_at, completed_at, claim_worker_id, claim_taken_at, last_failure, remote_ref`

const sqlLoadOutbox = `SELECT ` + outboxColumns + ` FROM {schema}turn_outbox WHERE outbox_id = $1`

const sqlOutboxForCommand = `
SELECT ` + outboxColumns + ` FROM {schema}turn_outbox WHERE command_id = $1 ORDER BY created_at, outbox_id`

const sqlEnqueue = `
INSERT INTO {schema}turn_outbox (outbox_id, command_id, destination, payload, idempotency_key, status,
    attempt_count, next_attempt_at, created_at)
VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, $8)`

// The claim locks the due rows it selects and skips rows another claimer holds, so concurrent
// dispatchers split the due rows between them and never wait on each other. A row another claimer
// has just moved to dispatching fails the re-check of the WHERE clause and is not taken.
const sqlClaimDue = `
WITH due AS (
    SELECT outbox_id FROM {schema}turn_outbox
    WHERE status = 'pending' AND (next_attempt_at IS NULL OR next_attempt_at <= $1)
    ORDER BY created_at, outbox_id
    LIMIT $2
    FOR UPDATE SKIP LOCKED)
UPDATE {schema}turn_outbox o
SET status = 'dispatching', attempt_count = o.attempt_count + 1, claim_worker_id = $3, claim_taken_at = $1
FROM due WHERE o.outbox_id = due.outbox_id
RETURNING o.outbox_id, o.command_id, o.destination, o.payload, o.idempotency_key, o.status,
    o.attempt_count, o.next_attempt_at, o.created_at, o.completed_at, o.claim_worker_id,
    o.claim_taken_at, o.last_failure, o.remote_ref`

// Every settlement is one statement: the UPDATE carries the statuses it may leave in its WHERE
// clause, and the same statement returns the status the row had (its snapshot, NULL for no row),
// which is all the rule needs when the UPDATE matched nothing. A refused settlement changes
// nothing at all.
const settledTail = `
SELECT EXISTS (SELECT 1 FROM moved), (SELECT status FROM {schema}turn_outbox WHERE outbox_id = $1)`

const sqlMarkCompleted = `
WITH moved AS (
    UPDATE {schema}turn_outbox
    SET status = 'completed', completed_at = $2, claim_worker_id = NULL, claim_taken_at = NULL
    WHERE outbox_id = $1 AND status IN ('dispatching', 'outcome_unknown')
    RETURNING 1)` + settledTail

const sqlReschedule = `
WITH moved AS (
    UPDATE {schema}turn_outbox
    SET status = 'pending', next_attempt_at = $2, last_failure = COALESCE($3, last_failure),
        claim_worker_id = NULL, claim_taken_at = NULL
    WHERE outbox_id = $1 AND status IN ('pending', 'dispatching', 'outcome_unknown')
    RETURNING 1)` + settledTail

// A definite failure settles the row. Repeating it on a failed row is accepted and changes
// nothing, the first reason included: the reason on record is the one the dispatcher saw first,
// which a retried report must not rewrite (the UPDATE's status list leaves a failed row alone).
const sqlMarkFailed = `
WITH moved AS (
    UPDATE {schema}turn_outbox
    SET status = 'failed', completed_at = $3, last_failure = $2, claim_worker_id = NULL, claim_taken_at = NULL
    WHERE outbox_id = $1 AND status IN ('dispatching', 'outcome_unknown')
    RETURNING 1)` + settledTail

// A dispatching row moves to outcome_unknown; a repeat on an outcome_unknown row only fills a
// missing remote reference. The two UPDATEs match exclusive statuses of the same snapshot, so at
// most one of them touches the row.
const sqlMarkOutcomeUnknown = `
WITH unknown AS (
    UPDATE {schema}turn_outbox
    SET status = 'outcome_unknown', remote_ref = $2, claim_worker_id = NULL, claim_taken_at = NULL
    WHERE outbox_id = $1 AND status = 'dispatching'
    RETURNING 1),
filled AS (
    UPDATE {schema}turn_outbox SET remote_ref = COALESCE(remote_ref, $2)
    WHERE outbox_id = $1 AND status = 'outcome_unknown'
    RETURNING 1),
moved AS (SELECT 1 FROM unknown UNION ALL SELECT 1 FROM filled)` + settledTail

const sqlReleaseExpiredClaims = `
UPDATE {schema}turn_outbox
SET status = 'pending', next_attempt_at = NULL, claim_worker_id = NULL, claim_taken_at = NULL
WHERE status = 'dispatching' AND claim_taken_at < $1
RETURNING outbox_id`

// Replay records.

// The record is stored whole as a document; the columns beside it are what the store reads.
const sqlPutReplay = `
INSERT INTO {schema}turn_replays (account_id, turn_id, conversation_id, phase, recorded_at, record)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (account_id, turn_id) DO UPDATE
SET conversation_id = EXCLUDED.conversation_id, phase = EXCLUDED.phase,
    recorded_at = EXCLUDED.recorded_at, record = EXCLUDED.record`

const sqlLoadReplay = `SELECT record FROM {schema}turn_replays WHERE account_id = $1 AND turn_id = $2`

// The newest limit records, returned oldest first.
const sqlReplaysForConversation = `
SELECT record FROM (
    SELECT record, recorded_at, turn_id FROM {schema}turn_replays
    WHERE account_id = $1 AND conversation_id = $2
    ORDER BY recorded_at DESC, turn_id DESC
    LIMIT $3) newest
ORDER BY recorded_at, turn_id`

// CommitIn applies a bundle inside the application's transaction under a savepoint, so that a
// failing item takes back only the bundle and leaves the transaction usable.
const (
	sqlCommitInSavepoint = `SAVEPOINT pgturn_bundle`
	sqlCommitInRollback  = `ROLLBACK TO SAVEPOINT pgturn_bundle; RELEASE SAVEPOINT pgturn_bundle`
	sqlCommitInRelease   = `RELEASE SAVEPOINT pgturn_bundle`
)

// statements holds every statement of a backend: field X is the text of constant sqlX with the
// backend's schema spliced in, filled once by name in New (pgdb.ExpandByName), so a field never
// carries another's text. pgx prepares and caches each text on its connections.
type statements struct {
	// Conversations, turns and their phase markers.
	LoadConversation, ListConversations, CreateConversation, AppendUserTurn, AppendAssistantTurn,
	LoadTurn, LoadRecentTurns, TurnPhase, SetTurnPhase, ListUnfinishedTurns string

	// Interactions (cards).
	LoadInteraction, InteractionsForTurn, ListOpenForConversation, ListOpenForCase,
	BlockingAnsweredAt, InsertInteraction, InsertReplacingBlocking, BeginResolution,
	FinishResolutionResolved, FinishResolutionFailed, FinishResolutionRestoreActive,
	InvalidateForCase, InvalidateCaseCards, ExpireDue string

	// The command journal.
	LoadCommand, CommandsForTurn, PendingForTurn, BeginCommand, BeginCommandReread, MarkExecuting,
	CompleteCommand string

	// The event journal.
	AppendEventsLock, AppendEvents, ListSince, ReadFrom, LoadEvents, CountEvents,
	RedactPayload string

	// The outbox.
	LoadOutbox, OutboxForCommand, Enqueue, ClaimDue, MarkCompleted, Reschedule, MarkFailed,
	MarkOutcomeUnknown, ReleaseExpiredClaims string

	// Replay records.
	PutReplay, LoadReplay, ReplaysForConversation string

	// CommitIn's savepoint, which names no table.
	CommitInSavepoint, CommitInRollback, CommitInRelease string
}

// statementTexts names every statement for pgdb.ExpandByName: the constant sqlX under "sqlX".
var statementTexts = map[string]string{
	"sqlLoadConversation":              sqlLoadConversation,
	"sqlListConversations":             sqlListConversations,
	"sqlCreateConversation":            sqlCreateConversation,
	"sqlAppendUserTurn":                sqlAppendUserTurn,
	"sqlAppendAssistantTurn":           sqlAppendAssistantTurn,
	"sqlLoadTurn":                      sqlLoadTurn,
	"sqlLoadRecentTurns":               sqlLoadRecentTurns,
	"sqlTurnPhase":                     sqlTurnPhase,
	"sqlSetTurnPhase":                  sqlSetTurnPhase,
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
	"sqlBeginCommandReread":            sqlBeginCommandReread,
	"sqlMarkExecuting":                 sqlMarkExecuting,
	"sqlCompleteCommand":               sqlCompleteCommand,
	"sqlAppendEventsLock":              sqlAppendEventsLock,
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
	"sqlReschedule":                    sqlReschedule,
	"sqlMarkFailed":                    sqlMarkFailed,
	"sqlMarkOutcomeUnknown":            sqlMarkOutcomeUnknown,
	"sqlReleaseExpiredClaims":          sqlReleaseExpiredClaims,
	"sqlPutReplay":                     sqlPutReplay,
	"sqlLoadReplay":                    sqlLoadReplay,
	"sqlReplaysForConversation":        sqlReplaysForConversation,
	"sqlCommitInSavepoint":             sqlCommitInSavepoint,
	"sqlCommitInRollback":              sqlCommitInRollback,
	"sqlCommitInRelease":               sqlCommitInRelease,
}
