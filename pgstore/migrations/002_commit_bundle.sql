-- A commit with side effects in one round-trip, for a single execution. It does what the batch
-- statement does for one item, but as a sequence of plain statements guarded by IFs: a bundle
-- pays only for the side effects it has, and each statement keeps a simple cached plan (the
-- set-based batch statement costs more server time for one item than it saves). It returns the
-- outbox seqs in emit order ('{}' for none), or NULL, without raising, when the CAS is lost, so
-- nothing is written.
CREATE FUNCTION {schema}stead_commit_bundle(
    p_id text, p_definition_id text, p_status text, p_outcome text, p_active_path text,
    p_parent_id text, p_created_at timestamptz, p_updated_at timestamptz,
    p_finished_at timestamptz, p_data text, p_old bigint, p_event text,
    p_emit_targets text[], p_emit_events text[],
    p_spawn_children text[], p_spawn_root_paths text[], p_spawn_contexts text[],
    p_arm_paths text[], p_arm_fire_at timestamptz[], p_disarm_paths text[],
    p_trace text, p_trace_cap bigint)
RETURNS bigint[] LANGUAGE plpgsql AS $$
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
        INSERT INTO {schema}stead_spawns (parent_id, child_id, root_path, context)
        SELECT p_id, s.child_id, s.root_path, s.context
        FROM unnest(p_spawn_children, p_spawn_root_paths, p_spawn_contexts) WITH ORDINALITY
            AS s(child_id, root_path, context, n)
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
