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
