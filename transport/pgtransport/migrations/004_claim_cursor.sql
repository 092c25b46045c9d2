-- transport_claim as in 003, with a cursor: p_after_key and p_after_group (NULL: none) are the
-- round-robin place of the last group this claimer took, and the claim looks there first. Every ack
-- moves a group to the back of the round-robin index and leaves its old entry behind, dead, in
-- front of every live one; a claim starting at the head crossed all of them, more with every
-- message served until a vacuum (with autovacuum off: 135 buffers per claim after 20,000 acks, 416
-- after 80,000, the claim-and-ack rate falling from 5,264 to 4,071 per second; with the cursor it
-- held at 6,200). Groups behind the cursor (handed back, their lease or park over, their claim
-- rolled back) are found by a claim without a cursor, which the client sends every so often, and by
-- this function whenever nothing is free after the cursor. r_key returns each group's place, for
-- the client's cursor. Plans stay generic and pinned to the indexes (see 003); the bounded pick is
-- an index range scan (a row comparison on the index's two columns).
DROP FUNCTION {schema}transport_claim(timestamptz, timestamptz, text, int, int);
CREATE FUNCTION {schema}transport_claim(
    p_now timestamptz, p_until timestamptz, p_token text, p_min int, p_max int,
    p_after_key timestamptz, p_after_group text)
RETURNS TABLE (r_group text, r_priority int, r_seq bigint, r_event text, r_key timestamptz)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    ids text[];
    prios int[];
    keys timestamptz[];
    seqs bigint[];
    events text[];
    skip text[] := '{}';
    n int := 0;
    emptied int;
    after_group text := p_after_group;
BEGIN
    -- The priority filter walks its own index, where the cursor's place means nothing.
    IF p_min > 0 THEN
        after_group := NULL;
    END IF;
    WHILE p_max = 1 LOOP
        r_group := NULL;
        IF after_group IS NOT NULL THEN
            SELECT t.group_id, t.priority, COALESCE(t.served_at, '-infinity'::timestamptz)
            INTO r_group, r_priority, r_key FROM {schema}transport_groups t
            WHERE (COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id) > (p_after_key, after_group)
              AND (t.locked_by IS NULL OR t.lease_until < p_now) AND t.group_id <> ALL (skip)
            ORDER BY COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id
            LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED;
        END IF;
        IF r_group IS NULL AND p_min > 0 THEN
            -- The literal priority > 0 lets the planner use the partial index of prioritised groups.
            SELECT t.group_id, t.priority, COALESCE(t.served_at, '-infinity'::timestamptz)
            INTO r_group, r_priority, r_key FROM {schema}transport_groups t
            WHERE (t.locked_by IS NULL OR t.lease_until < p_now)
              AND t.priority > 0 AND t.priority >= p_min AND t.group_id <> ALL (skip)
            ORDER BY COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id
            LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED;
        ELSIF r_group IS NULL THEN
            SELECT t.group_id, t.priority, COALESCE(t.served_at, '-infinity'::timestamptz)
            INTO r_group, r_priority, r_key FROM {schema}transport_groups t
            WHERE (t.locked_by IS NULL OR t.lease_until < p_now) AND t.group_id <> ALL (skip)
            ORDER BY COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id
            LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED;
        END IF;
        IF r_group IS NULL THEN
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
        ids := NULL;
        IF after_group IS NOT NULL THEN
            SELECT array_agg(p.group_id) INTO ids FROM (
                SELECT t.group_id FROM {schema}transport_groups t
                WHERE (COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id) > (p_after_key, after_group)
                  AND (t.locked_by IS NULL OR t.lease_until < p_now) AND t.group_id <> ALL (skip)
                ORDER BY COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id
                LIMIT p_max - n
                FOR NO KEY UPDATE SKIP LOCKED) p;
        END IF;
        IF ids IS NULL AND p_min > 0 THEN
            SELECT array_agg(p.group_id) INTO ids FROM (
                SELECT t.group_id FROM {schema}transport_groups t
                WHERE (t.locked_by IS NULL OR t.lease_until < p_now)
                  AND t.priority > 0 AND t.priority >= p_min AND t.group_id <> ALL (skip)
                ORDER BY COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id
                LIMIT p_max - n
                FOR NO KEY UPDATE SKIP LOCKED) p;
        ELSIF ids IS NULL THEN
            after_group := NULL;
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
        -- its snapshot predates it and would still show the acked message). Leased rows no
        -- longer match the picks above, so a later round cannot take them again.
        WITH leased AS (
            UPDATE {schema}transport_groups t SET locked_by = p_token, lease_until = p_until
            WHERE t.group_id = ANY (ids)
            RETURNING t.group_id, t.priority, COALESCE(t.served_at, '-infinity'::timestamptz) AS k
        )
        SELECT array_agg(l.group_id), array_agg(l.priority), array_agg(l.k), array_agg(h.seq),
            array_agg(h.event)
        INTO ids, prios, keys, seqs, events
        FROM leased l LEFT JOIN LATERAL (
            SELECT m.seq, m.event FROM {schema}transport_messages m
            WHERE m.group_id = l.group_id ORDER BY m.seq LIMIT 1) h ON true;
        emptied := 0;
        FOR i IN 1 .. cardinality(ids) LOOP
            r_group := ids[i];
            r_priority := prios[i];
            r_key := keys[i];
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
        EXIT WHEN n >= p_max;
        -- Short of the batch: after the cursor's round, one more from the head; after a round
        -- from the head, another only if empty groups took places.
        IF after_group IS NOT NULL THEN
            after_group := NULL;
        ELSIF emptied = 0 THEN
            EXIT;
        END IF;
    END LOOP;
END
$$;
