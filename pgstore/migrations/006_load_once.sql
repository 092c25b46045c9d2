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
