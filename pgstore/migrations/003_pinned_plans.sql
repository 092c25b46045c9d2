-- The hot path's reads and commits run in functions whose plans are made once per connection and
-- pinned to the indexes.
--
-- Why: a prepared statement or a PL/pgSQL statement is planned either afresh on every call
-- (custom plans: the planning then costs more than executing these one-row lookups) or once,
-- generically, from the statistics of that moment, which on a fresh schema are those of empty
-- tables. The load-for-events statement was re-planned on every call (its array parameters make
-- each custom plan look cheaper than the generic one). Worse, its dedupe check was an EXISTS in
-- the select list, which PostgreSQL may run as a "hashed subplan": it read the whole of
-- stead_processed_events, a table that gains a row per event, into a hash on every call (seen
-- with auto_explain in the runtime benchmark; the load then cost more than claim, commit and ack
-- together). The loads below join the marker by its primary key instead, and every statement in
-- these functions is a lookup or a short walk of a primary key whatever the tables hold, so the
-- functions plan generically and forbid the other plans instead of trusting statistics that may
-- be stale (or, with autovacuum off, never taken).

-- stead_load_for_event returns the execution's blob and whether it applied p_event; no row when
-- the execution does not exist.
CREATE FUNCTION {schema}stead_load_for_event(p_id text, p_event text)
RETURNS TABLE (r_data text, r_processed boolean)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan
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
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan
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

-- The commit functions of 001 and 002 get the same settings.
ALTER FUNCTION {schema}stead_commit_state(text, text, text, text, text, text, timestamptz,
    timestamptz, timestamptz, text, bigint, text)
    SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off;
ALTER FUNCTION {schema}stead_commit_bundle(text, text, text, text, text, text, timestamptz,
    timestamptz, timestamptz, text, bigint, text, text[], text[], text[], text[], text[], text[],
    timestamptz[], text[], text, bigint)
    SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off;
