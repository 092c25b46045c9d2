-- The execution store. Every name carries the stead_ prefix so that the tables can share a schema
-- (or the search_path) with an application's own. Identifier columns use the "C" collation: ids
-- compare byte-wise (the order List promises on every backend, whatever the database's
-- collation), and comparisons are cheaper.

-- One row per execution. data is the whole execution as JSON text (stead.EncodeExecution); the
-- other columns are copies of the fields listing filters and returns, written by the same CAS, so
-- that listing never reads data. trace_next is the index the next trace step gets: keeping it on
-- the row the CAS locks lets the trace INSERT take its index without reading the trace table.
CREATE TABLE {schema}stead_executions (
    id            text COLLATE "C" PRIMARY KEY,
    definition_id text COLLATE "C" NOT NULL,
    status        text COLLATE "C" NOT NULL,
    outcome       text,
    active_path   text,
    parent_id     text,
    version       bigint NOT NULL CHECK (version > 0),
    trace_next    bigint NOT NULL DEFAULT 0,
    created_at    timestamptz,
    updated_at    timestamptz,
    finished_at   timestamptz,
    data          text NOT NULL
) WITH (fillfactor = 85); -- room for HOT updates: most commits change no indexed column

-- Keyset listing: each filter walks an index in id order and stops after one page.
CREATE INDEX stead_executions_definition ON {schema}stead_executions (definition_id, id);
CREATE INDEX stead_executions_status ON {schema}stead_executions (status, id);

-- The transactional outbox. lease_until is set by a claim; a row whose lease is NULL or over is
-- claimable. No index covers lease_until, so claiming (an UPDATE of lease_until only) stays a
-- HOT update; claims walk the primary key from the oldest seq.
CREATE TABLE {schema}stead_outbox (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source_id   text COLLATE "C" NOT NULL,
    target_id   text COLLATE "C",
    event       text NOT NULL,
    lease_until timestamptz
);
CREATE INDEX stead_outbox_source ON {schema}stead_outbox (source_id, seq);
CREATE INDEX stead_outbox_target ON {schema}stead_outbox (target_id) WHERE target_id IS NOT NULL;

-- The dedupe ledger: which events each execution has applied.
CREATE TABLE {schema}stead_processed_events (
    execution_id text COLLATE "C" NOT NULL,
    event_id     text COLLATE "C" NOT NULL,
    PRIMARY KEY (execution_id, event_id)
);

-- Durable timers: at most one per (execution, state path).
CREATE TABLE {schema}stead_timers (
    execution_id text COLLATE "C" NOT NULL,
    path         text COLLATE "C" NOT NULL,
    fire_at      timestamptz NOT NULL,
    PRIMARY KEY (execution_id, path)
);
CREATE INDEX stead_timers_due ON {schema}stead_timers (fire_at, execution_id, path);

-- The spawn outbox: child executions to create, claimed like the outbox.
CREATE TABLE {schema}stead_spawns (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    parent_id   text COLLATE "C" NOT NULL,
    child_id    text NOT NULL,
    root_path   text NOT NULL,
    context     text,
    lease_until timestamptz
);
CREATE INDEX stead_spawns_parent ON {schema}stead_spawns (parent_id, seq);

-- The optional trace ring.
CREATE TABLE {schema}stead_trace (
    execution_id text COLLATE "C" NOT NULL,
    idx          bigint NOT NULL,
    entry        text NOT NULL,
    PRIMARY KEY (execution_id, idx)
);

-- The fast path: a state-only commit in one round-trip. It does the version CAS (or the first
-- insert, for version 0) and the optional dedupe insert, and returns false on a lost CAS instead
-- of raising, so the caller's implicit transaction ends cleanly with nothing written.
CREATE FUNCTION {schema}stead_commit_state(
    p_id text, p_definition_id text, p_status text, p_outcome text, p_active_path text,
    p_parent_id text, p_created_at timestamptz, p_updated_at timestamptz,
    p_finished_at timestamptz, p_data text, p_old bigint, p_event text)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF p_old = 0 THEN
        INSERT INTO {schema}stead_executions (id, definition_id, status, outcome, active_path,
            parent_id, version, created_at, updated_at, finished_at, data)
        VALUES (p_id, p_definition_id, p_status, NULLIF(p_outcome, ''), NULLIF(p_active_path, ''),
            NULLIF(p_parent_id, ''), 1, p_created_at, p_updated_at, p_finished_at, p_data)
        ON CONFLICT (id) DO NOTHING;
    ELSE
        UPDATE {schema}stead_executions
        SET definition_id = p_definition_id, status = p_status, outcome = NULLIF(p_outcome, ''),
            active_path = NULLIF(p_active_path, ''), parent_id = NULLIF(p_parent_id, ''),
            version = p_old + 1, created_at = p_created_at, updated_at = p_updated_at,
            finished_at = p_finished_at, data = p_data
        WHERE id = p_id AND version = p_old;
    END IF;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF p_event <> '' THEN
        INSERT INTO {schema}stead_processed_events (execution_id, event_id)
        VALUES (p_id, p_event) ON CONFLICT DO NOTHING;
    END IF;
    RETURN true;
END
$$;
