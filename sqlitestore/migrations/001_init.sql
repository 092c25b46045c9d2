-- Executions: the whole record in data (JSON), and beside it the columns listing filters and
-- shows, written by the same compare-and-swap so that listing never reads data. Times are unix
-- microseconds, NULL when unset.
CREATE TABLE executions (
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
CREATE INDEX executions_by_definition ON executions (definition_id, id);
CREATE INDEX executions_by_status ON executions (status, id);

-- Rows owned by one execution go with it: ON DELETE CASCADE makes a purge complete even if a
-- later migration adds a table, and the foreign key refuses rows for an execution that is gone.
CREATE TABLE processed_events (
    execution_id TEXT NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    event_id     TEXT NOT NULL,
    PRIMARY KEY (execution_id, event_id)
) WITHOUT ROWID;

CREATE TABLE timers (
    execution_id TEXT    NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    path         TEXT    NOT NULL,
    fire_at      INTEGER NOT NULL,
    PRIMARY KEY (execution_id, path)
) WITHOUT ROWID;
CREATE INDEX timers_by_fire_at ON timers (fire_at, execution_id, path);

CREATE TABLE trace (
    execution_id TEXT    NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    idx          INTEGER NOT NULL,
    step         BLOB    NOT NULL,
    PRIMARY KEY (execution_id, idx)
);

-- Outbox and spawn intents: AUTOINCREMENT so that a sequence number is never reused, even after
-- the newest rows were acknowledged. lease_until (unix microseconds) is 0 until claimed; a row is
-- claimable while lease_until <= now.
CREATE TABLE outbox (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    source      TEXT    NOT NULL,
    target      TEXT    NOT NULL DEFAULT '',
    event       BLOB    NOT NULL,
    lease_until INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX outbox_by_source ON outbox (source, seq);
CREATE INDEX outbox_by_target ON outbox (target);

CREATE TABLE spawns (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    parent_id   TEXT    NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    child_id    TEXT    NOT NULL,
    root_path   TEXT    NOT NULL,
    context     BLOB,
    lease_until INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX spawns_by_parent ON spawns (parent_id, seq);
