-- The turn store on SQLite: every table, index and constraint, the same names as on PostgreSQL
-- so that one file or one schema reads alike.
--
-- Types: ids are their canonical text form (lower-case, so text order is id order); times are
-- INTEGER unix microseconds (the contract's precision, stored exactly); documents are JSON text;
-- booleans are 0 or 1. STRICT tables refuse a value of the wrong type from any writer.
--
-- account_id leads every key and index (but the outbox's, a system queue addressed by id): the
-- tenant is part of a row's identity, so another tenant's id is simply a different row.

CREATE TABLE turn_conversations (
    account_id      TEXT    NOT NULL,
    conversation_id TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    metadata        TEXT    NOT NULL DEFAULT 'null',
    PRIMARY KEY (account_id, conversation_id)
) STRICT, WITHOUT ROWID;
-- ListConversations reads an account's newest conversations: this index hands them over in
-- creation order, so the read costs the page, not the account's whole history.
CREATE INDEX turn_conversations_by_created ON turn_conversations (account_id, created_at, conversation_id);

CREATE TABLE turn_turns (
    account_id      TEXT    NOT NULL,
    turn_id         TEXT    NOT NULL,
    conversation_id TEXT    NOT NULL,
    received_at     INTEGER NOT NULL,
    user_turn       TEXT    NOT NULL,
    assistant_turn  TEXT,
    PRIMARY KEY (account_id, turn_id),
    -- A turn cannot outlive its conversation: erasing a conversation is one DELETE.
    CONSTRAINT turn_turns_conversation_fk FOREIGN KEY (account_id, conversation_id)
        REFERENCES turn_conversations (account_id, conversation_id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
CREATE INDEX turn_turns_by_conversation ON turn_turns (account_id, conversation_id, received_at, turn_id);

CREATE TABLE turn_phases (
    account_id      TEXT    NOT NULL,
    turn_id         TEXT    NOT NULL,
    conversation_id TEXT    NOT NULL,
    phase           TEXT    NOT NULL,
    updated_at      INTEGER NOT NULL,
    PRIMARY KEY (account_id, turn_id),
    -- Recovery never finds a marker whose turn is gone.
    CONSTRAINT turn_phases_turn_fk FOREIGN KEY (account_id, turn_id)
        REFERENCES turn_turns (account_id, turn_id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
-- Crash recovery scans only the turns still in flight.
CREATE INDEX turn_phases_unfinished ON turn_phases (account_id, turn_id) WHERE phase NOT IN ('delivered', 'failed');

CREATE TABLE turn_interactions (
    account_id           TEXT    NOT NULL,
    interaction_id       TEXT    NOT NULL,
    conversation_id      TEXT    NOT NULL,
    workflow_key         TEXT    NOT NULL,
    case_id              TEXT    NOT NULL,
    case_revision        INTEGER NOT NULL CHECK (case_revision >= 0),
    kind                 TEXT    NOT NULL,
    blocking             INTEGER NOT NULL CHECK (blocking IN (0, 1)),
    revision_independent INTEGER NOT NULL CHECK (revision_independent IN (0, 1)),
    payload_hash         TEXT    NOT NULL,
    -- The card as created, never rewritten; the columns below own everything that moves.
    interaction          TEXT    NOT NULL,
    status               TEXT    NOT NULL,
    created_at           INTEGER NOT NULL,
    expires_at           INTEGER,
    resolved_at          INTEGER,
    resolved_option_id   TEXT,
    resolved_by_turn     TEXT,
    resolution_event_ids TEXT    NOT NULL DEFAULT '[]', -- a JSON array of ids
    failure_code         TEXT,
    invalidation         TEXT,
    PRIMARY KEY (account_id, interaction_id)
) STRICT, WITHOUT ROWID;
-- At most one open blocking card per case, enforced by the file itself: a write that goes around
-- this package (another program, a raw INSERT) meets the same rule. Partial, because a settled
-- card frees the slot and a non-blocking card never takes it.
CREATE UNIQUE INDEX turn_interactions_one_open_blocking_per_case
    ON turn_interactions (account_id, workflow_key, case_id)
    WHERE blocking AND status IN ('active', 'resolving');
CREATE INDEX turn_interactions_open_by_conversation
    ON turn_interactions (account_id, conversation_id, created_at, interaction_id)
    WHERE status IN ('active', 'resolving');
CREATE INDEX turn_interactions_by_case
    ON turn_interactions (account_id, workflow_key, case_id, created_at, interaction_id);
-- The expiry sweep crosses tenants, so this is the one interaction index not led by account.
CREATE INDEX turn_interactions_due ON turn_interactions (expires_at)
    WHERE status = 'active' AND expires_at IS NOT NULL;
-- InteractionsForTurn finds the cards a turn created or answered. The creating turn is part of
-- the card's document, never rewritten, so it is indexed as an expression rather than copied into
-- a column; the answering turn has a column, set only once a card is answered.
CREATE INDEX turn_interactions_by_created_turn
    ON turn_interactions (account_id, json_extract(interaction, '$.created_by_turn'));
CREATE INDEX turn_interactions_by_resolving_turn
    ON turn_interactions (account_id, resolved_by_turn) WHERE resolved_by_turn IS NOT NULL;

CREATE TABLE turn_journal (
    account_id        TEXT    NOT NULL,
    command_id        TEXT    NOT NULL,
    idempotency_key   TEXT    NOT NULL,
    turn_id           TEXT    NOT NULL,
    workflow_key      TEXT    NOT NULL,
    case_id           TEXT    NOT NULL,
    expected_revision INTEGER NOT NULL CHECK (expected_revision >= 0),
    command_type      TEXT    NOT NULL,
    command_payload   TEXT    NOT NULL,
    origin            TEXT    NOT NULL,
    status            TEXT    NOT NULL,
    result            TEXT,
    created_at        INTEGER NOT NULL,
    completed_at      INTEGER,
    PRIMARY KEY (account_id, command_id),
    -- Exactly one admission per key and account: a retried request replays, never re-executes.
    CONSTRAINT turn_journal_idempotency_key UNIQUE (account_id, idempotency_key)
) STRICT, WITHOUT ROWID;
CREATE INDEX turn_journal_by_turn ON turn_journal (account_id, turn_id, created_at, command_id);

CREATE TABLE turn_events (
    -- Assigned by the store in insert order. AUTOINCREMENT: a value is never handed out twice,
    -- even after the newest row were deleted. One writer at a time holds the file, so sequences
    -- become visible in the order they are assigned.
    sequence      INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id    TEXT    NOT NULL,
    event_id      TEXT    NOT NULL,
    workflow_key  TEXT    NOT NULL,
    case_id       TEXT    NOT NULL,
    case_revision INTEGER NOT NULL CHECK (case_revision >= 0),
    command_id    TEXT    NOT NULL,
    event_type    TEXT    NOT NULL,
    payload       TEXT    NOT NULL,
    occurred_at   INTEGER NOT NULL,
    -- The audit trail of an erased payload lives on the event row itself, recorded whole or not
    -- at all.
    redacted_at         INTEGER,
    redaction_authority TEXT,
    CONSTRAINT turn_events_redaction_complete CHECK ((redacted_at IS NULL) = (redaction_authority IS NULL))
) STRICT;
CREATE UNIQUE INDEX turn_events_by_id ON turn_events (account_id, event_id);
CREATE INDEX turn_events_by_case ON turn_events (account_id, workflow_key, case_id, sequence);
-- The per-account stream (read from a cursor) walks this index, so a page costs the same
-- however many events other tenants have appended in between.
CREATE INDEX turn_events_by_account ON turn_events (account_id, sequence);

-- The outbox has no account on purpose: it is a dispatch queue owned by the system and addressed
-- by outbox_id, never by user input.
CREATE TABLE turn_outbox (
    outbox_id       TEXT    NOT NULL PRIMARY KEY,
    command_id      TEXT    NOT NULL,
    destination     TEXT    NOT NULL,
    payload         TEXT    NOT NULL,
    idempotency_key TEXT    NOT NULL,
    status          TEXT    NOT NULL,
    attempt_count   INTEGER NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
    next_attempt_at INTEGER,
    created_at      INTEGER NOT NULL,
    completed_at    INTEGER,
    claim_worker_id TEXT,
    claim_taken_at  INTEGER,
    last_failure    TEXT,
    remote_ref      TEXT,
    -- One external action per destination, however often the bundle carrying it is applied.
    CONSTRAINT turn_outbox_destination_idempotency_key UNIQUE (destination, idempotency_key)
) STRICT, WITHOUT ROWID;
CREATE INDEX turn_outbox_due ON turn_outbox (created_at, outbox_id) WHERE status = 'pending';
CREATE INDEX turn_outbox_by_command ON turn_outbox (command_id, created_at, outbox_id);
CREATE INDEX turn_outbox_claims ON turn_outbox (claim_taken_at) WHERE status = 'dispatching';

CREATE TABLE turn_replays (
    account_id      TEXT    NOT NULL,
    turn_id         TEXT    NOT NULL,
    conversation_id TEXT    NOT NULL,
    phase           TEXT    NOT NULL,
    recorded_at     INTEGER NOT NULL,
    record          TEXT    NOT NULL,
    PRIMARY KEY (account_id, turn_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX turn_replays_by_conversation ON turn_replays (account_id, conversation_id, recorded_at, turn_id);
