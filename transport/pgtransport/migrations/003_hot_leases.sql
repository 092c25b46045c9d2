-- A claim used to write the end of its lease into lock_until, the column the round-robin index
-- orders by, so every claim and every ack rewrote the group row with new index entries (never a
-- HOT update), and the claimers' walk from the head of that index crossed the dead entries of
-- every group served since the last vacuum (measured: hundreds of buffers to lock one row after
-- a few thousand events with autovacuum off, and a claim costing more than the store's commit).
--
-- The column is now two: served_at is the group's place in the round-robin (when it was last
-- served; NULL: never, or handed back by a nack), the only one indexed, and written only when a
-- group is freed; lease_until is when the lease or park of locked_by ends, indexed nowhere. A
-- claim and a park then change only unindexed columns: PostgreSQL updates the row in place on its
-- page (HOT) without touching an index, and one index entry per served message remains, written
-- by the ack that sends the group to the back. Order and semantics are unchanged.
ALTER TABLE {schema}transport_groups RENAME COLUMN lock_until TO served_at;
ALTER TABLE {schema}transport_groups ADD COLUMN lease_until timestamptz;
-- Groups held while the migration runs keep their lease (a rolling upgrade stops old workers
-- first: their functions are replaced below).
UPDATE {schema}transport_groups SET lease_until = served_at WHERE locked_by IS NOT NULL;

-- The functions of 001 with the new columns, and a scalar path for single messages. Their plans stay generic (see 002), and are now also
-- pinned to the indexes. A generic plan is made once per connection, from the statistics of that
-- moment: a worker that first called the ack on a young schema (a few hundred groups) kept a hash
-- join over a sequential scan of transport_groups for as long as its connection lived, while the
-- table grew to thousands of rows (seen with auto_explain in the runtime benchmark, and as most of
-- the server's CPU in perf). Every statement here is a lookup or walk of an index whatever the
-- table's size, so the functions forbid the other plans rather than trust statistics that may be
-- old (or, with autovacuum off, never taken).
-- transport_settle_empty handles a group that a claim leased and found without messages (its last
-- publisher rolled back, or an ack left it to a publisher that had not committed yet). It returns
-- the group's head if a message arrived meanwhile; otherwise it deletes the group, or frees it
-- (to the back of the round-robin) if a publisher is filling it, and returns NULLs.
CREATE FUNCTION {schema}transport_settle_empty(
    p_group text, p_now timestamptz, OUT r_seq bigint, OUT r_event text)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    locked boolean;
BEGIN
    PERFORM 1 FROM {schema}transport_groups t WHERE t.group_id = p_group FOR UPDATE SKIP LOCKED;
    locked := FOUND;
    SELECT m.seq, m.event INTO r_seq, r_event FROM {schema}transport_messages m
    WHERE m.group_id = p_group ORDER BY m.seq LIMIT 1;
    IF FOUND THEN
        RETURN;
    END IF;
    IF locked THEN
        DELETE FROM {schema}transport_groups t WHERE t.group_id = p_group;
    ELSE
        UPDATE {schema}transport_groups t SET locked_by = NULL, lease_until = NULL, served_at = p_now
        WHERE t.group_id = p_group;
    END IF;
END
$$;

-- transport_claim: as in 001. A claim of one message (the unbatched worker's) takes a path of
-- scalar statements, whose plans are cheaper to start than the set-based form's arrays and joins.
CREATE OR REPLACE FUNCTION {schema}transport_claim(
    p_now timestamptz, p_until timestamptz, p_token text, p_min int, p_max int)
RETURNS TABLE (r_group text, r_priority int, r_seq bigint, r_event text)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    ids text[];
    prios int[];
    seqs bigint[];
    events text[];
    skip text[] := '{}';
    n int := 0;
    emptied int;
BEGIN
    WHILE p_max = 1 LOOP
        IF p_min > 0 THEN
            SELECT t.group_id, t.priority INTO r_group, r_priority FROM {schema}transport_groups t
            WHERE (t.locked_by IS NULL OR t.lease_until < p_now)
              AND t.priority > 0 AND t.priority >= p_min AND t.group_id <> ALL (skip)
            ORDER BY COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id
            LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED;
        ELSE
            SELECT t.group_id, t.priority INTO r_group, r_priority FROM {schema}transport_groups t
            WHERE (t.locked_by IS NULL OR t.lease_until < p_now) AND t.group_id <> ALL (skip)
            ORDER BY COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id
            LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED;
        END IF;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        UPDATE {schema}transport_groups t SET locked_by = p_token, lease_until = p_until
        WHERE t.group_id = r_group;
        -- The head, in a statement of its own (see the set-based form below for why).
        SELECT m.seq, m.event INTO r_seq, r_event FROM {schema}transport_messages m
        WHERE m.group_id = r_group ORDER BY m.seq LIMIT 1;
        IF NOT FOUND THEN
            SELECT e.r_seq, e.r_event INTO r_seq, r_event
            FROM {schema}transport_settle_empty(r_group, p_now) e;
        END IF;
        IF r_seq IS NOT NULL THEN
            RETURN NEXT;
            RETURN;
        END IF;
        skip := skip || r_group;
    END LOOP;
    LOOP
        -- Pick and lock the groups. The literal priority > 0 of the first form lets the planner
        -- use the partial index of prioritised groups.
        IF p_min > 0 THEN
            SELECT array_agg(p.group_id) INTO ids FROM (
                SELECT t.group_id FROM {schema}transport_groups t
                WHERE (t.locked_by IS NULL OR t.lease_until < p_now)
                  AND t.priority > 0 AND t.priority >= p_min AND t.group_id <> ALL (skip)
                ORDER BY COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id
                LIMIT p_max - n
                FOR NO KEY UPDATE SKIP LOCKED) p;
        ELSE
            SELECT array_agg(p.group_id) INTO ids FROM (
                SELECT t.group_id FROM {schema}transport_groups t
                WHERE (t.locked_by IS NULL OR t.lease_until < p_now) AND t.group_id <> ALL (skip)
                ORDER BY COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id
                LIMIT p_max - n
                FOR NO KEY UPDATE SKIP LOCKED) p;
        END IF;
        EXIT WHEN ids IS NULL;
        -- Lease them and read their heads, in a statement of its own: its snapshot is taken
        -- after the rows were locked, so it sees the ack of whoever held a group just before
        -- (the statement that locked a row may have waited for or skipped past that commit, but
        -- its snapshot predates it and would still show the acked message).
        WITH leased AS (
            UPDATE {schema}transport_groups t SET locked_by = p_token, lease_until = p_until
            WHERE t.group_id = ANY (ids)
            RETURNING t.group_id, t.priority
        )
        SELECT array_agg(l.group_id), array_agg(l.priority), array_agg(h.seq), array_agg(h.event)
        INTO ids, prios, seqs, events
        FROM leased l LEFT JOIN LATERAL (
            SELECT m.seq, m.event FROM {schema}transport_messages m
            WHERE m.group_id = l.group_id ORDER BY m.seq LIMIT 1) h ON true;
        emptied := 0;
        FOR i IN 1 .. cardinality(ids) LOOP
            r_group := ids[i];
            r_priority := prios[i];
            r_seq := seqs[i];
            r_event := events[i];
            IF r_seq IS NULL THEN
                SELECT e.r_seq, e.r_event INTO r_seq, r_event
                FROM {schema}transport_settle_empty(r_group, p_now) e;
                IF r_seq IS NULL THEN
                    skip := skip || r_group;
                    emptied := emptied + 1;
                    CONTINUE;
                END IF;
            END IF;
            n := n + 1;
            RETURN NEXT;
        END LOOP;
        EXIT WHEN emptied = 0 OR n >= p_max;
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION {schema}transport_ack(
    p_groups text[], p_seqs bigint[], p_tokens text[], p_now timestamptz, p_channel text)
RETURNS int LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    acked text[];
    acked_seqs bigint[];
    drained text[];
    freed int := 0;
    n int;
BEGIN
    IF cardinality(p_groups) = 1 THEN
        -- One lease (the unbatched worker's ack): the same steps in scalar statements.
        PERFORM 1 FROM {schema}transport_groups t
        WHERE t.group_id = p_groups[1] AND t.locked_by = p_tokens[1] FOR NO KEY UPDATE;
        IF NOT FOUND THEN
            RETURN 0;
        END IF;
        DELETE FROM {schema}transport_messages m WHERE m.seq = p_seqs[1] AND m.group_id = p_groups[1];
        acked := p_groups;
        UPDATE {schema}transport_groups t SET locked_by = NULL, lease_until = NULL, served_at = p_now
        WHERE t.group_id = p_groups[1] AND EXISTS (SELECT 1 FROM {schema}transport_messages m
                                                   WHERE m.group_id = p_groups[1] AND m.seq > p_seqs[1]);
        GET DIAGNOSTICS freed = ROW_COUNT;
    ELSE
        -- The fence: only leases whose token still holds the group, locked in id order.
        WITH held AS (
            SELECT t.group_id, a.seq FROM {schema}transport_groups t
            JOIN unnest(p_groups, p_seqs, p_tokens) AS a(grp, seq, token)
              ON t.group_id = a.grp AND t.locked_by = a.token
            ORDER BY t.group_id
            FOR NO KEY UPDATE OF t
        ), gone AS (
            DELETE FROM {schema}transport_messages m USING held h
            WHERE m.seq = h.seq AND m.group_id = h.group_id
            RETURNING m.group_id
        )
        SELECT array_agg(h.group_id), array_agg(h.seq) INTO acked, acked_seqs FROM held h;
        IF acked IS NULL THEN
            RETURN 0;
        END IF;
        -- Groups with messages left go to the back of the round-robin. Looking only past the acked
        -- message skips the index entries of the messages acked before it. A message published
        -- concurrently with a lower number is not missed: the group then takes the path below,
        -- whose check looks at every message.
        UPDATE {schema}transport_groups t SET locked_by = NULL, lease_until = NULL, served_at = p_now
        FROM unnest(acked, acked_seqs) AS a(grp, seq)
        WHERE t.group_id = a.grp
          AND EXISTS (SELECT 1 FROM {schema}transport_messages m WHERE m.group_id = a.grp AND m.seq > a.seq);
        GET DIAGNOSTICS freed = ROW_COUNT;
    END IF;
    IF freed < cardinality(acked) THEN
        -- Drained groups are deleted, but only under a lock no publisher holds: a group a
        -- publisher is filling is freed instead of waited for. Once locked, no publisher can
        -- reach the row until this transaction ends, and the check below sees every message
        -- committed before.
        SELECT array_agg(k.group_id) INTO drained FROM (
            SELECT t.group_id FROM {schema}transport_groups t
            WHERE t.group_id = ANY (acked) AND t.locked_by IS NOT NULL
            ORDER BY t.group_id FOR UPDATE SKIP LOCKED) k;
        DELETE FROM {schema}transport_groups t
        WHERE t.group_id = ANY (drained)
          AND NOT EXISTS (SELECT 1 FROM {schema}transport_messages m WHERE m.group_id = t.group_id);
        UPDATE {schema}transport_groups t SET locked_by = NULL, lease_until = NULL, served_at = p_now
        WHERE t.group_id = ANY (acked) AND t.locked_by IS NOT NULL;
        GET DIAGNOSTICS n = ROW_COUNT;
        freed := freed + n;
    END IF;
    IF freed > 0 AND p_channel <> '' THEN
        PERFORM pg_notify(p_channel, '');
    END IF;
    RETURN freed;
END
$$;

CREATE OR REPLACE FUNCTION {schema}transport_nack(
    p_group text, p_token text, p_park timestamptz, p_channel text)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF p_park IS NOT NULL THEN
        UPDATE {schema}transport_groups t SET lease_until = p_park
        WHERE t.group_id = p_group AND t.locked_by = p_token;
        RETURN false;
    END IF;
    UPDATE {schema}transport_groups t SET locked_by = NULL, lease_until = NULL, served_at = NULL
    WHERE t.group_id = p_group AND t.locked_by = p_token;
    IF FOUND AND p_channel <> '' THEN
        PERFORM pg_notify(p_channel, '');
    END IF;
    RETURN FOUND;
END
$$;
