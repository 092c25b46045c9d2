-- The execution store. Every name carries the stead_ prefix so that the tables can share a schema
-- (or the search_path) with an application's own. Identifier columns use the "C" collation: ids
-- compare byte-wise (the order List promises on every backend, whatever the database's
-- collation), and comparisons are cheaper.
--
-- The functions below run the hot path, one call per round-trip. Each is declared with
-- plan_cache_mode = force_generic_plan and without sequential scans, hash joins or merge joins:
-- every statement in them is a primary-key lookup or a short walk of an index whatever the tables
-- hold, so a plan is made once per connection and can never be one chosen from the statistics of
-- a young or never-analysed table (bench/results/pgstore.md tells what such a plan cost).

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
-- Listing by finish time (the retention sweep, an operator's "finished before"): the finished
-- roots in id order with their finish time, so that a page of finished roots walks this index
-- from the cursor on and tests the finish time in the index, without visiting the rows it skips.
-- An execution enters it once, when it finishes; the commits of a running execution change none
-- of its columns, so they stay HOT updates.
CREATE INDEX stead_executions_finished_roots ON {schema}stead_executions (id, finished_at)
    WHERE parent_id IS NULL AND finished_at IS NOT NULL;
-- Counting a listing by definition and status (Count, the console's totals): one index holding
-- both columns, so that the GROUP BY can be an index-only scan in group order.
CREATE INDEX stead_executions_counts ON {schema}stead_executions (definition_id, status);

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
    lease_until timestamptz,
    -- The trace context of the spawn intent (stead.Spawn.Trace): the start event of a child
    -- that a relay creates after a crash carries it, so that the child joins its parent's trace
    -- as it does when the committing worker creates it. Empty for none, as Event.Trace.
    trace       text NOT NULL DEFAULT ''
);
CREATE INDEX stead_spawns_parent ON {schema}stead_spawns (parent_id, seq);

-- Secrets of the store, made once with the schema: 'cursor' signs listing cursors (a keyed MAC),
-- so that a cursor is refused unless this database produced it. 32 bytes of SHA-256 over two
-- random UUIDs (gen_random_uuid is core PostgreSQL; pgcrypto need not be installed).
CREATE TABLE {schema}stead_secrets (
    name  text COLLATE "C" PRIMARY KEY,
    value bytea NOT NULL
);
INSERT INTO {schema}stead_secrets (name, value)
VALUES ('cursor', sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')));

-- The optional trace ring.
CREATE TABLE {schema}stead_trace (
    execution_id text COLLATE "C" NOT NULL,
    idx          bigint NOT NULL,
    entry        text NOT NULL,
    PRIMARY KEY (execution_id, idx)
);

-- stead_commit_state is a state-only commit: the version CAS (or the first insert, for version
-- 0) and the optional dedupe marker. It returns false on a lost CAS instead of raising, so that
-- the caller's transaction goes on (or ends) cleanly with nothing written.
CREATE FUNCTION {schema}stead_commit_state(
    p_id text, p_definition_id text, p_status text, p_outcome text, p_active_path text,
    p_parent_id text, p_created_at timestamptz, p_updated_at timestamptz,
    p_finished_at timestamptz, p_data text, p_old bigint, p_event text)
RETURNS boolean LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
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

-- stead_commit_bundle is a commit with side effects: the CAS of stead_commit_state, then a plain
-- statement for each kind of side effect the bundle has, guarded by an IF, so that a bundle pays
-- only for what it carries. Timer ops arrive reduced to one per path, so the upsert never
-- touches a row twice. It returns the outbox seqs in emit order ('{}' for none), or NULL,
-- without raising, when the CAS is lost: then nothing is written.
CREATE FUNCTION {schema}stead_commit_bundle(
    p_id text, p_definition_id text, p_status text, p_outcome text, p_active_path text,
    p_parent_id text, p_created_at timestamptz, p_updated_at timestamptz,
    p_finished_at timestamptz, p_data text, p_old bigint, p_event text,
    p_emit_targets text[], p_emit_events text[],
    p_spawn_children text[], p_spawn_root_paths text[], p_spawn_contexts text[],
    p_spawn_traces text[],
    p_arm_paths text[], p_arm_fire_at timestamptz[], p_disarm_paths text[],
    p_trace text, p_trace_cap bigint)
RETURNS bigint[] LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    v_trace_next bigint;
    v_seqs bigint[] := '{}';
BEGIN
    IF p_old = 0 THEN
        INSERT INTO {schema}stead_executions (id, definition_id, status, outcome, active_path,
            parent_id, version, trace_next, created_at, updated_at, finished_at, data)
        VALUES (p_id, p_definition_id, p_status, NULLIF(p_outcome, ''), NULLIF(p_active_path, ''),
            NULLIF(p_parent_id, ''), 1, (p_trace IS NOT NULL)::int, p_created_at, p_updated_at,
            p_finished_at, p_data)
        ON CONFLICT (id) DO NOTHING
        RETURNING trace_next INTO v_trace_next;
    ELSE
        UPDATE {schema}stead_executions
        SET definition_id = p_definition_id, status = p_status, outcome = NULLIF(p_outcome, ''),
            active_path = NULLIF(p_active_path, ''), parent_id = NULLIF(p_parent_id, ''),
            version = p_old + 1, created_at = p_created_at, updated_at = p_updated_at,
            finished_at = p_finished_at, data = p_data,
            trace_next = trace_next + (p_trace IS NOT NULL)::int
        WHERE id = p_id AND version = p_old
        RETURNING trace_next INTO v_trace_next;
    END IF;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF p_event <> '' THEN
        INSERT INTO {schema}stead_processed_events (execution_id, event_id)
        VALUES (p_id, p_event) ON CONFLICT DO NOTHING;
    END IF;
    IF cardinality(p_emit_events) > 0 THEN
        -- Seqs are drawn in the ORDER BY of the SELECT, so sorted they follow the emits.
        WITH ins AS (
            INSERT INTO {schema}stead_outbox (source_id, target_id, event)
            SELECT p_id, NULLIF(m.target, ''), m.event
            FROM unnest(p_emit_targets, p_emit_events) WITH ORDINALITY AS m(target, event, n)
            ORDER BY m.n
            RETURNING seq)
        SELECT array_agg(seq ORDER BY seq) INTO v_seqs FROM ins;
    END IF;
    IF cardinality(p_spawn_children) > 0 THEN
        INSERT INTO {schema}stead_spawns (parent_id, child_id, root_path, context, trace)
        SELECT p_id, s.child_id, s.root_path, s.context, s.trace
        FROM unnest(p_spawn_children, p_spawn_root_paths, p_spawn_contexts, p_spawn_traces)
            WITH ORDINALITY AS s(child_id, root_path, context, trace, n)
        ORDER BY s.n;
    END IF;
    IF cardinality(p_arm_paths) > 0 THEN
        INSERT INTO {schema}stead_timers (execution_id, path, fire_at)
        SELECT p_id, t.path, t.fire_at FROM unnest(p_arm_paths, p_arm_fire_at) AS t(path, fire_at)
        ON CONFLICT (execution_id, path) DO UPDATE SET fire_at = EXCLUDED.fire_at;
    END IF;
    IF cardinality(p_disarm_paths) > 0 THEN
        DELETE FROM {schema}stead_timers
        WHERE execution_id = p_id AND path = ANY (p_disarm_paths);
    END IF;
    IF p_trace IS NOT NULL THEN
        -- The index comes from the row the CAS just locked and bumped.
        INSERT INTO {schema}stead_trace (execution_id, idx, entry)
        VALUES (p_id, v_trace_next - 1, p_trace);
        IF p_trace_cap > 0 THEN
            DELETE FROM {schema}stead_trace
            WHERE execution_id = p_id AND idx <= v_trace_next - 1 - p_trace_cap;
        END IF;
    END IF;
    RETURN v_seqs;
END
$$;

-- stead_commit_batch is stead_commit_bundle for many executions at once, set-based: one
-- statement, one transaction, each execution with its own compare-and-swap. The executions arrive
-- as parallel arrays, sorted by id (so that concurrent batches lock their rows in one order);
-- side effects arrive as arrays that name their execution by its 1-based position. The CAS
-- decides the winners (won) and every side effect joins won, so a loser writes nothing while the
-- others land; version 0 inserts, and ON CONFLICT DO NOTHING makes an existing row a loss.
-- It returns one row per winner (r_seq NULL) and one per outbox row it wrote (its seq).
--
-- It does not call stead_commit_bundle per execution: running those statements one item at a
-- time made a batch take 1.75 times as long (bench/results/pgstore.md). Nor does it forbid hash
-- and merge joins: its joins are between the batch's own rows, and nested loops made it 2.2
-- times slower. Sequential scans stay forbidden, so the tables are always reached by their
-- primary keys, in id order.
CREATE FUNCTION {schema}stead_commit_batch(
    p_ids text[], p_definition_ids text[], p_statuses text[], p_outcomes text[],
    p_active_paths text[], p_parent_ids text[], p_created_at timestamptz[],
    p_updated_at timestamptz[], p_finished_at timestamptz[], p_data text[], p_old bigint[],
    p_events text[], p_traces text[],
    p_emit_items int[], p_emit_targets text[], p_emit_events text[],
    p_spawn_items int[], p_spawn_children text[], p_spawn_root_paths text[],
    p_spawn_contexts text[], p_spawn_traces text[],
    p_arm_items int[], p_arm_paths text[], p_arm_fire_at timestamptz[],
    p_disarm_items int[], p_disarm_paths text[],
    p_trace_cap bigint)
RETURNS TABLE (r_ord bigint, r_seq bigint) LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
BEGIN
    RETURN QUERY
    WITH input AS (
        SELECT * FROM unnest(p_ids, p_definition_ids, p_statuses, p_outcomes, p_active_paths,
            p_parent_ids, p_created_at, p_updated_at, p_finished_at, p_data, p_old, p_events,
            p_traces)
        WITH ORDINALITY AS i(id, definition_id, status, outcome, active_path, parent_id,
            created_at, updated_at, finished_at, data, old, processed, trace, ord)
    ), upd AS (
        UPDATE {schema}stead_executions e
        SET definition_id = i.definition_id, status = i.status, outcome = NULLIF(i.outcome, ''),
            active_path = NULLIF(i.active_path, ''), parent_id = NULLIF(i.parent_id, ''),
            version = i.old + 1, created_at = i.created_at, updated_at = i.updated_at,
            finished_at = i.finished_at, data = i.data,
            trace_next = e.trace_next + (i.trace IS NOT NULL)::int
        FROM input i
        WHERE e.id = i.id AND i.old > 0 AND e.version = i.old
        RETURNING i.ord, e.id, e.trace_next
    ), ins AS (
        INSERT INTO {schema}stead_executions (id, definition_id, status, outcome, active_path,
            parent_id, version, trace_next, created_at, updated_at, finished_at, data)
        SELECT i.id, i.definition_id, i.status, NULLIF(i.outcome, ''), NULLIF(i.active_path, ''),
            NULLIF(i.parent_id, ''), 1, (i.trace IS NOT NULL)::int, i.created_at, i.updated_at,
            i.finished_at, i.data
        FROM input i WHERE i.old = 0
        ORDER BY i.ord
        ON CONFLICT (id) DO NOTHING
        RETURNING id, trace_next
    ), won AS (
        SELECT u.ord, u.id, u.trace_next FROM upd u
        UNION ALL
        SELECT i.ord, n.id, n.trace_next FROM ins n JOIN input i ON i.id = n.id
    ), dedupe AS (
        INSERT INTO {schema}stead_processed_events (execution_id, event_id)
        SELECT w.id, i.processed FROM won w JOIN input i ON i.ord = w.ord
        WHERE i.processed <> ''
        ON CONFLICT DO NOTHING
    ), outbox AS (
        -- Seqs are drawn in the ORDER BY of the SELECT, so sorted they follow the emits.
        INSERT INTO {schema}stead_outbox (source_id, target_id, event)
        SELECT w.id, NULLIF(m.target, ''), m.event
        FROM unnest(p_emit_items, p_emit_targets, p_emit_events) WITH ORDINALITY
            AS m(item, target, event, n)
        JOIN won w ON w.ord = m.item
        ORDER BY m.n
        RETURNING seq, source_id
    ), spawns AS (
        INSERT INTO {schema}stead_spawns (parent_id, child_id, root_path, context, trace)
        SELECT w.id, s.child_id, s.root_path, s.context, s.trace
        FROM unnest(p_spawn_items, p_spawn_children, p_spawn_root_paths, p_spawn_contexts,
            p_spawn_traces)
            WITH ORDINALITY AS s(item, child_id, root_path, context, trace, n)
        JOIN won w ON w.ord = s.item
        ORDER BY s.n
    ), arm AS (
        INSERT INTO {schema}stead_timers (execution_id, path, fire_at)
        SELECT w.id, t.path, t.fire_at
        FROM unnest(p_arm_items, p_arm_paths, p_arm_fire_at) AS t(item, path, fire_at)
        JOIN won w ON w.ord = t.item
        ON CONFLICT (execution_id, path) DO UPDATE SET fire_at = EXCLUDED.fire_at
    ), disarm AS (
        DELETE FROM {schema}stead_timers x
        USING unnest(p_disarm_items, p_disarm_paths) AS d(item, path), won w
        WHERE w.ord = d.item AND x.execution_id = w.id AND x.path = d.path
    ), trace AS (
        -- The index comes from the row the CAS just locked and bumped.
        INSERT INTO {schema}stead_trace (execution_id, idx, entry)
        SELECT w.id, w.trace_next - 1, i.trace FROM won w JOIN input i ON i.ord = w.ord
        WHERE i.trace IS NOT NULL
        RETURNING execution_id, idx
    ), trace_cap AS (
        DELETE FROM {schema}stead_trace x USING trace t
        WHERE p_trace_cap > 0 AND x.execution_id = t.execution_id
            AND x.idx <= t.idx - p_trace_cap
    )
    SELECT w.ord, NULL::bigint FROM won w
    UNION ALL
    SELECT i.ord, o.seq FROM outbox o JOIN input i ON i.id = o.source_id;
END
$$;

-- stead_load_for_event returns the execution's record and whether it applied p_event; no row
-- when the execution does not exist. The marker is joined by its primary key: an EXISTS in the
-- select list may run as a hashed subplan that reads the whole ledger on every call.
CREATE FUNCTION {schema}stead_load_for_event(p_id text, p_event text)
RETURNS TABLE (r_data text, r_processed boolean)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
BEGIN
    RETURN QUERY
    SELECT e.data, p.event_id IS NOT NULL
    FROM {schema}stead_executions e
    LEFT JOIN {schema}stead_processed_events p ON p.execution_id = e.id AND p.event_id = p_event
    WHERE e.id = p_id;
END
$$;

-- stead_load_for_events is stead_load_for_event for many pairs: one row per pair, in the order
-- of the arrays (r_ord, 1-based), with NULL data for a missing execution.
CREATE FUNCTION {schema}stead_load_for_events(p_ids text[], p_events text[])
RETURNS TABLE (r_ord bigint, r_data text, r_processed boolean)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
BEGIN
    RETURN QUERY
    SELECT r.ord, e.data, p.event_id IS NOT NULL
    FROM unnest(p_ids, p_events) WITH ORDINALITY AS r(id, event_id, ord)
    LEFT JOIN {schema}stead_executions e ON e.id = r.id
    LEFT JOIN {schema}stead_processed_events p ON p.execution_id = e.id AND p.event_id = r.event_id
    ORDER BY r.ord;
END
$$;

-- stead_require_committed raises serialization_failure (SQLSTATE 40001) unless this transaction
-- wrote version p_version of execution p_id: the commit queued before it won its
-- compare-and-swap. A caller that pipelines a step's commit, the acknowledgement of its message
-- and COMMIT in one round trip queues it right after the commit: on a lost compare-and-swap it
-- aborts the transaction, so that the statements behind it are skipped and the COMMIT rolls
-- back, instead of acknowledging a message whose step did not land. The row's xmin is the
-- transaction that wrote this version of it; the store's commit functions run no
-- subtransactions, so it is the caller's own transaction id when the commit won.
CREATE FUNCTION {schema}stead_require_committed(p_id text, p_version bigint)
RETURNS boolean LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
BEGIN
    PERFORM 1 FROM {schema}stead_executions e
    WHERE e.id = p_id AND e.version = p_version AND e.xmin = pg_current_xact_id()::xid;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'serialization_failure',
            MESSAGE = format('stead: the commit of %s at version %s was lost', p_id, p_version);
    END IF;
    RETURN true;
END
$$;

-- stead_load_for_events_once is stead_load_for_events for a worker that asks for several events
-- of one execution (a chain of its queued events): the record is read and sent for the first ref
-- of each execution only (p_first), and the later refs of it get NULL data and their own
-- processed answer, which the caller pairs with the first ref's record. The rows come from one
-- statement, so every ref of an execution sees the same version of it. The marker is joined by
-- the ref's execution id, so that a later ref needs no read of the execution row; a missing
-- execution has no markers (a purge deletes them with it), and the caller reports its refs as
-- not processed in any case.
CREATE FUNCTION {schema}stead_load_for_events_once(p_ids text[], p_events text[], p_first boolean[])
RETURNS TABLE (r_ord bigint, r_data text, r_processed boolean)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
BEGIN
    RETURN QUERY
    SELECT r.ord, e.data, p.event_id IS NOT NULL
    FROM unnest(p_ids, p_events, p_first) WITH ORDINALITY AS r(id, event_id, first, ord)
    LEFT JOIN {schema}stead_executions e ON r.first AND e.id = r.id
    LEFT JOIN {schema}stead_processed_events p ON p.execution_id = r.id AND p.event_id = r.event_id
    ORDER BY r.ord;
END
$$;

-- stead_notify_finished tells the waiters of worker.Client.Wait that an execution finished: when
-- a row is inserted finished, or its status becomes done, failed or cancelled, it notifies the
-- channel of the table's schema with the execution's id. PostgreSQL sends the notification when
-- the transaction commits, and never for one that rolls back, so a waiter never hears of a finish
-- that did not happen. The triggers' WHEN clauses keep every other commit free of the call; one
-- notification per finished execution is the whole cost.
CREATE FUNCTION {schema}stead_notify_finished() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    channel text := 'stead_finished.' || TG_TABLE_SCHEMA;
BEGIN
    IF octet_length(channel) > 63 THEN -- a channel is an identifier: at most 63 bytes
        channel := 'stead_finished.' || md5(TG_TABLE_SCHEMA);
    END IF;
    PERFORM pg_notify(channel, NEW.id);
    RETURN NULL;
END
$$;

CREATE TRIGGER stead_executions_finished_insert AFTER INSERT ON {schema}stead_executions
FOR EACH ROW WHEN (NEW.status IN ('done', 'failed', 'cancelled'))
EXECUTE FUNCTION {schema}stead_notify_finished();

CREATE TRIGGER stead_executions_finished_update AFTER UPDATE OF status ON {schema}stead_executions
FOR EACH ROW WHEN (NEW.status IN ('done', 'failed', 'cancelled') AND OLD.status IS DISTINCT FROM NEW.status)
EXECUTE FUNCTION {schema}stead_notify_finished();

-- Execution attributes (stead.Execution.Attributes): one narrow row per attribute, written in
-- the commit's transaction by the statement sent behind the commit function (sqlCommitAttrs).
-- kind is stead.AttrKind (1 string, 2 int, 3 time, 4 bool); a string is in s, every other kind
-- in n (an integer, unix microseconds, 0 or 1), so that one index serves the three numeric
-- kinds. The two partial indexes answer a condition by key and value and hold the execution id,
-- so a filter or a count reads them alone (an index-only scan); stead_attributes_execution finds
-- an execution's set, which a commit replaces and a purge deletes. It is no primary key on
-- (execution_id, key): the commit that replaces a set holds the execution's row lock, so no two
-- writers interleave, and an index of the id alone is deduplicated by PostgreSQL (an
-- execution's few rows share one entry), about a third of the size. Strings use the "C"
-- collation: they compare byte-wise, as Go compares them. No foreign key, like the other tables
-- of the store.
CREATE TABLE {schema}stead_attributes (
    execution_id text COLLATE "C" NOT NULL,
    key          text COLLATE "C" NOT NULL,
    kind         smallint NOT NULL,
    s            text COLLATE "C",
    n            bigint
);
CREATE INDEX stead_attributes_execution ON {schema}stead_attributes (execution_id);
CREATE INDEX stead_attributes_n ON {schema}stead_attributes (key, kind, n, execution_id) WHERE n IS NOT NULL;
CREATE INDEX stead_attributes_s ON {schema}stead_attributes (key, s, execution_id) WHERE s IS NOT NULL;

-- Schedules (package schedule): the configuration is one json document, kept as written, that
-- the store never reads; the columns are what runners query and swap. A runner's claim is a
-- compare-and-swap on next_tick (UPDATE ... WHERE next_tick = $from), which is what makes a tick
-- fire once however many processes run. The partial index answers "what is due" for unpaused
-- schedules only.
CREATE TABLE {schema}stead_schedules (
    id                text COLLATE "C" PRIMARY KEY,
    data              json        NOT NULL,
    paused            boolean     NOT NULL,
    next_tick         timestamptz NOT NULL,
    last_tick         timestamptz,
    last_execution_id text        NOT NULL,
    version           bigint      NOT NULL,
    updated_at        timestamptz NOT NULL
);
CREATE INDEX stead_schedules_due ON {schema}stead_schedules (next_tick) WHERE NOT paused;
