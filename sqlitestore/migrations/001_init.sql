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
-- Listing by finish time (the retention sweep, an operator's "finished before"): the finished
-- roots in id order with their finish time, so that a page of finished roots walks this index
-- from the cursor on and tests the finish time without reading the rows it skips. Only roots
-- that finished are in it, and an execution enters it once, when it finishes: the commits of a
-- running execution never touch it (the store writes parent_id and finished_at only when they
-- change, like definition_id and status).
CREATE INDEX stead_executions_finished_roots ON stead_executions (id, finished_at)
    WHERE parent_id = '' AND finished_at IS NOT NULL;
-- Counting a listing by definition and status (Count, the console's totals): one index holding
-- both columns, so that the GROUP BY walks it in group order and reads no row. The store writes
-- definition_id and status only when they change, so a step that keeps its status never
-- touches it.
CREATE INDEX stead_executions_counts ON stead_executions (definition_id, status);

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
    lease_until INTEGER,
    -- The trace context of the spawn intent (stead.Spawn.Trace): the start event of a child that
    -- a relay creates after a crash carries it, so that the child joins its parent's trace as it
    -- does when the committing worker creates it. Empty for none, as Event.Trace.
    trace       TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX stead_spawns_parent ON stead_spawns (parent_id, seq);

-- Execution attributes (stead.Execution.Attributes): one narrow row per attribute, written in
-- the commit that sets them. kind is stead.AttrKind (1 string, 2 int, 3 time, 4 bool); a string
-- is in s, every other kind in n (an integer, unix microseconds, 0 or 1), so that one index
-- serves the three numeric kinds. The primary key is the execution's set, which a commit
-- replaces and a purge deletes; the two partial indexes answer conditions by key and value and
-- yield execution ids. Strings compare byte-wise (BINARY), as Go compares them.
CREATE TABLE stead_attributes (
    execution_id TEXT    NOT NULL REFERENCES stead_executions (id) ON DELETE CASCADE,
    key          TEXT    NOT NULL,
    kind         INTEGER NOT NULL,
    s            TEXT,
    n            INTEGER,
    PRIMARY KEY (execution_id, key)
) WITHOUT ROWID;
CREATE INDEX stead_attributes_n ON stead_attributes (key, kind, n) WHERE n IS NOT NULL;
CREATE INDEX stead_attributes_s ON stead_attributes (key, s) WHERE s IS NOT NULL;

-- Schedules (package schedule): the configuration is one JSON document the store never reads;
-- the columns are what runners query and swap. next_tick is unix microseconds; a runner's claim
-- is a compare-and-swap on it (UPDATE ... WHERE next_tick = ?), which is what makes a tick fire
-- once however many processes run. The partial index answers "what is due" for unpaused
-- schedules only.
CREATE TABLE stead_schedules (
    id                TEXT    PRIMARY KEY,
    data              TEXT    NOT NULL,
    paused            INTEGER NOT NULL,
    next_tick         INTEGER NOT NULL,
    last_tick         INTEGER,
    last_execution_id TEXT    NOT NULL,
    version           INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX stead_schedules_due ON stead_schedules (next_tick) WHERE paused = 0;

-- Secrets of the store, made once with the schema: 'cursor' signs listing cursors (a keyed MAC),
-- so that a cursor is refused unless this database produced it.
CREATE TABLE stead_secrets (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
INSERT INTO stead_secrets (name, value) VALUES ('cursor', randomblob(32));
