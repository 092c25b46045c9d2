-- The execution store's schema. Names are those of pgstore, so one file or one schema holds the
-- same tables whichever backend wrote them. Identifiers compare byte-wise (SQLite's BINARY
-- collation), as Go compares strings. Times are unix microseconds, NULL when unset.

-- Executions: the whole record in data (JSON), and beside it the columns listing filters and
-- shows, written by the same compare-and-swap so that listing never reads data.
CREATE TABLE stead_executions (
    id            TEXT PRIMARY KEY,
    definition_id TEXT    NOT NULL,
    status        TEXT    NOT NULL,
    outcome       TEXT    NOT NULL DEFAULT '',
    active_path   TEXT    NOT NULL DEFAULT '',
    parent_id     TEXT    NOT NULL DEFAULT '',
    version       INTEGER NOT NULL,
    created_at    INTEGER,
    updated_at    INTEGER,
    finished_at   INTEGER,
    data          BLOB    NOT NULL
);
-- Keyset listing: each filter has an index that yields ids in order from the cursor on.
CREATE INDEX stead_executions_definition ON stead_executions (definition_id, id);
CREATE INDEX stead_executions_status ON stead_executions (status, id);

-- Rows owned by one execution go with it: ON DELETE CASCADE makes a purge complete even if a
-- later migration adds a table, and the foreign key refuses rows for an execution that is gone.

-- The dedupe ledger: which events each execution has applied.
CREATE TABLE stead_processed_events (
    execution_id TEXT NOT NULL REFERENCES stead_executions (id) ON DELETE CASCADE,
    event_id     TEXT NOT NULL,
    PRIMARY KEY (execution_id, event_id)
) WITHOUT ROWID;

-- Durable timers: at most one per (execution, state path).
CREATE TABLE stead_timers (
    execution_id TEXT    NOT NULL REFERENCES stead_executions (id) ON DELETE CASCADE,
    path         TEXT    NOT NULL,
    fire_at      INTEGER NOT NULL,
    PRIMARY KEY (execution_id, path)
) WITHOUT ROWID;
CREATE INDEX stead_timers_due ON stead_timers (fire_at, execution_id, path);

-- The optional trace ring: each step as JSON; idx is its index, which the store assigns.
CREATE TABLE stead_trace (
    execution_id TEXT    NOT NULL REFERENCES stead_executions (id) ON DELETE CASCADE,
    idx          INTEGER NOT NULL,
    entry        BLOB    NOT NULL,
    PRIMARY KEY (execution_id, idx)
);

-- The transactional outbox and the spawn intents: AUTOINCREMENT so that a sequence number is
-- never reused, even after the newest rows were acknowledged. lease_until is NULL until a claim
-- sets it; a row is claimable while it is NULL or at most the claim's now. target_id is '' for
-- an event delivered to no execution; it is no foreign key, since the target may not exist yet.
CREATE TABLE stead_outbox (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    source_id   TEXT    NOT NULL,
    target_id   TEXT    NOT NULL DEFAULT '',
    event       BLOB    NOT NULL,
    lease_until INTEGER
);
CREATE INDEX stead_outbox_source ON stead_outbox (source_id, seq);
CREATE INDEX stead_outbox_target ON stead_outbox (target_id);

CREATE TABLE stead_spawns (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    parent_id   TEXT    NOT NULL REFERENCES stead_executions (id) ON DELETE CASCADE,
    child_id    TEXT    NOT NULL,
    root_path   TEXT    NOT NULL,
    context     BLOB,
    lease_until INTEGER
);
CREATE INDEX stead_spawns_parent ON stead_spawns (parent_id, seq);

-- Secrets of the store, made once with the schema: 'cursor' signs listing cursors (a keyed MAC),
-- so that a cursor is refused unless this database produced it.
CREATE TABLE stead_secrets (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
INSERT INTO stead_secrets (name, value) VALUES ('cursor', randomblob(32));
