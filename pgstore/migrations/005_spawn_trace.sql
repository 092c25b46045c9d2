-- The trace context of a spawn intent (stead.Spawn.Trace): the start event of a child that a
-- relay creates after a crash carries it, so that the child joins its parent's trace as it does
-- when the committing worker creates it. Empty for none, as Event.Trace.
--
-- The two commit functions that write spawn intents take one more array, the intents' traces,
-- beside their contexts; they are otherwise those of 001, which is why they are dropped and made
-- again here (a function's parameters cannot be changed in place).
ALTER TABLE {schema}stead_spawns ADD COLUMN trace text NOT NULL DEFAULT '';

DROP FUNCTION {schema}stead_commit_bundle(text, text, text, text, text, text, timestamptz,
    timestamptz, timestamptz, text, bigint, text, text[], text[], text[], text[], text[], text[],
    timestamptz[], text[], text, bigint);

DROP FUNCTION {schema}stead_commit_batch(text[], text[], text[], text[], text[], text[],
    timestamptz[], timestamptz[], timestamptz[], text[], bigint[], text[], text[], int[], text[],
    text[], int[], text[], text[], text[], int[], text[], timestamptz[], int[], text[], bigint);

-- stead_commit_bundle as in 001, with the spawn intents' traces.
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

-- stead_commit_batch as in 001, with the spawn intents' traces.
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
