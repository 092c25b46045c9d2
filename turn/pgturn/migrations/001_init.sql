-- The turn store: every table, index and constraint. Statements only create (IF NOT EXISTS), so
-- re-applying them to a schema that already has them changes nothing.
--
-- account_id leads every key and index (but the outbox's, a system queue addressed by id): the
-- tenant is part of a row's identity, so another tenant's id is simply a different row, and a
-- query that forgets the tenant finds no index to use.

CREATE TABLE IF NOT EXISTS {schema}turn_conversations (
    account_id      text        NOT NULL,
    conversation_id uuid        NOT NULL,
    created_at      timestamptz NOT NULL,
    metadata        jsonb       NOT NULL DEFAULT 'null'::jsonb,
    PRIMARY KEY (account_id, conversation_id)
);
-- ListConversations reads an account's newest conversations: this index hands them over in
-- creation order, so the read costs the page, not the account's whole history.
CREATE INDEX IF NOT EXISTS turn_conversations_by_created
    ON {schema}turn_conversations (account_id, created_at, conversation_id);

CREATE TABLE IF NOT EXISTS {schema}turn_turns (
    account_id      text        NOT NULL,
    turn_id         uuid        NOT NULL,
    conversation_id uuid        NOT NULL,
    received_at     timestamptz NOT NULL,
    user_turn       jsonb       NOT NULL,
    assistant_turn  jsonb,
    PRIMARY KEY (account_id, turn_id),
    -- A turn cannot outlive its conversation: erasing a conversation is one DELETE.
    CONSTRAINT turn_turns_conversation_fk FOREIGN KEY (account_id, conversation_id)
        REFERENCES {schema}turn_conversations (account_id, conversation_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS turn_turns_by_conversation
    ON {schema}turn_turns (account_id, conversation_id, received_at, turn_id);

CREATE TABLE IF NOT EXISTS {schema}turn_phases (
    account_id      text        NOT NULL,
    turn_id         uuid        NOT NULL,
    conversation_id uuid        NOT NULL,
    phase           text        NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (account_id, turn_id),
    -- Recovery never finds a marker whose turn is gone.
    CONSTRAINT turn_phases_turn_fk FOREIGN KEY (account_id, turn_id)
        REFERENCES {schema}turn_turns (account_id, turn_id) ON DELETE CASCADE
);
-- Crash recovery scans only the turns still in flight.
CREATE INDEX IF NOT EXISTS turn_phases_unfinished
    ON {schema}turn_phases (account_id, turn_id) WHERE phase NOT IN ('delivered', 'failed');

CREATE TABLE IF NOT EXISTS {schema}turn_interactions (
    account_id           text        NOT NULL,
    interaction_id       uuid        NOT NULL,
    conversation_id      uuid        NOT NULL,
    workflow_key         text        NOT NULL,
    case_id              text        NOT NULL,
    case_revision        bigint      NOT NULL CHECK (case_revision >= 0),
    kind                 text        NOT NULL,
    blocking             boolean     NOT NULL,
    revision_independent boolean     NOT NULL,
    payload_hash         text        NOT NULL,
    -- The card as created, never rewritten; the columns below own everything that moves.
    interaction          jsonb       NOT NULL,
    status               text        NOT NULL,
    created_at           timestamptz NOT NULL,
    expires_at           timestamptz,
    resolved_at          timestamptz,
    resolved_option_id   text,
    resolved_by_turn     uuid,
    resolution_event_ids uuid[]      NOT NULL DEFAULT '{}',
    failure_code         text,
    invalidation         jsonb,
    PRIMARY KEY (account_id, interaction_id)
);
-- At most one open blocking card per case, enforced where two concurrent inserts cannot both
-- read "free": the loser of the race fails on this index. Partial, because a settled card frees
-- the slot and a non-blocking card never takes it.
CREATE UNIQUE INDEX IF NOT EXISTS turn_interactions_one_open_blocking_per_case
    ON {schema}turn_interactions (account_id, workflow_key, case_id)
    WHERE blocking AND status IN ('active', 'resolving');
CREATE INDEX IF NOT EXISTS turn_interactions_open_by_conversation
    ON {schema}turn_interactions (account_id, conversation_id, created_at, interaction_id)
    WHERE status IN ('active', 'resolving');
CREATE INDEX IF NOT EXISTS turn_interactions_by_case
    ON {schema}turn_interactions (account_id, workflow_key, case_id, created_at, interaction_id);
-- The expiry sweep crosses tenants, so this is the one interaction index not led by account.
CREATE INDEX IF NOT EXISTS turn_interactions_due
    ON {schema}turn_interactions (expires_at)
    WHERE status = 'active' AND expires_at IS NOT NULL;
-- InteractionsForTurn finds the cards a turn created or answered. The creating turn is part of
-- the card's document, never rewritten, so it is indexed as an expression rather than copied into
-- a column; the answering turn has a column, set only once a card is answered.
CREATE INDEX IF NOT EXISTS turn_interactions_by_created_turn
    ON {schema}turn_interactions (account_id, (interaction->>'created_by_turn'));
CREATE INDEX IF NOT EXISTS turn_interactions_by_resolving_turn
    ON {schema}turn_interactions (account_id, resolved_by_turn) WHERE resolved_by_turn IS NOT NULL;

CREATE TABLE IF NOT EXISTS {schema}turn_journal (
    account_id        text        NOT NULL,
    command_id        uuid        NOT NULL,
    idempotency_key   text        NOT NULL,
    turn_id           uuid        NOT NULL,
    workflow_key      text        NOT NULL,
    case_id           text        NOT NULL,
    expected_revision bigint      NOT NULL CHECK (expected_revision >= 0),
    command_type      text        NOT NULL,
    command_payload   jsonb       NOT NULL,
    origin            jsonb       NOT NULL,
    status            text        NOT NULL,
    result            jsonb,
    created_at        timestamptz NOT NULL,
    completed_at      timestamptz,
    PRIMARY KEY (account_id, command_id),
    -- Exactly one admission per key and account: a retried request replays, never re-executes.
    CONSTRAINT turn_journal_idempotency_key UNIQUE (account_id, idempotency_key)
);
CREATE INDEX IF NOT EXISTS turn_journal_by_turn
    ON {schema}turn_journal (account_id, turn_id, created_at, command_id);

CREATE TABLE IF NOT EXISTS {schema}turn_events (
    -- Assigned by the store in insert order, so read-back order is append order. Gaps are
    -- allowed (a rolled-back insert consumes values); reuse and reordering are not.
    sequence      bigint      GENERATED ALWAYS AS IDENTITY,
    account_id    text        NOT NULL,
    event_id      uuid        NOT NULL,
    workflow_key  text        NOT NULL,
    case_id       text        NOT NULL,
    case_revision bigint      NOT NULL CHECK (case_revision >= 0),
    command_id    uuid        NOT NULL,
    event_type    text        NOT NULL,
    payload       jsonb       NOT NULL,
    occurred_at   timestamptz NOT NULL,
    -- The audit trail of an erased payload lives on the event row itself, so the one UPDATE that
    -- erases a payload also records when and on whose authority, and a redaction is recorded
    -- whole or not at all.
    redacted_at         timestamptz,
    redaction_authority text,
    PRIMARY KEY (account_id, event_id),
    CONSTRAINT turn_events_redaction_complete CHECK ((redacted_at IS NULL) = (redaction_authority IS NULL))
);
CREATE UNIQUE INDEX IF NOT EXISTS turn_events_sequence ON {schema}turn_events (sequence);
CREATE INDEX IF NOT EXISTS turn_events_by_case
    ON {schema}turn_events (account_id, workflow_key, case_id, sequence);
-- The per-account stream (read from a cursor) walks this index, so a page costs the same
-- however many events other tenants have appended in between.
CREATE INDEX IF NOT EXISTS turn_events_by_account ON {schema}turn_events (account_id, sequence);

-- The outbox has no account on purpose: it is a dispatch queue owned by the system and addressed
-- by outbox_id, never by user input; command_id leads back to the journal entry that produced it.
CREATE TABLE IF NOT EXISTS {schema}turn_outbox (
    outbox_id       uuid        PRIMARY KEY,
    command_id      uuid        NOT NULL,
    destination     text        NOT NULL,
    payload         jsonb       NOT NULL,
    idempotency_key text        NOT NULL,
    status          text        NOT NULL,
    attempt_count   integer     NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
    next_attempt_at timestamptz,
    created_at      timestamptz NOT NULL,
    completed_at    timestamptz,
    claim_worker_id text,
    claim_taken_at  timestamptz,
    last_failure    text,
    remote_ref      text,
    -- One external action per destination, however often the bundle carrying it is applied.
    CONSTRAINT turn_outbox_destination_idempotency_key UNIQUE (destination, idempotency_key)
);
CREATE INDEX IF NOT EXISTS turn_outbox_due
    ON {schema}turn_outbox (created_at, outbox_id) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS turn_outbox_by_command
    ON {schema}turn_outbox (command_id, created_at, outbox_id);
CREATE INDEX IF NOT EXISTS turn_outbox_claims
    ON {schema}turn_outbox (claim_taken_at) WHERE status = 'dispatching';

CREATE TABLE IF NOT EXISTS {schema}turn_replays (
    account_id      text        NOT NULL,
    turn_id         uuid        NOT NULL,
    conversation_id uuid        NOT NULL,
    phase           text        NOT NULL,
    recorded_at     timestamptz NOT NULL,
    record          jsonb       NOT NULL,
    PRIMARY KEY (account_id, turn_id)
);
CREATE INDEX IF NOT EXISTS turn_replays_by_conversation
    ON {schema}turn_replays (account_id, conversation_id, recorded_at, turn_id);
