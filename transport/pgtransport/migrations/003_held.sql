-- Claims that write nothing: a claim inside the caller's transaction whose only lease is the
-- transaction's own lock on the group rows (ClaimHeldTx). Inside a transaction the lease that
-- transport_claim writes is never seen by anyone else before the transaction ends (the row lock
-- keeps every other claimer away meanwhile), and the ack in the same transaction overwrites it: it
-- is a row version written for nothing on every message. Held claims skip it, and their acks and
-- nacks skip the token fence, which the row lock replaces. A group held this way is free again the
-- moment its transaction ends, whether the transaction committed or rolled back, unless it was
-- acked (deleted or sent to the back of the round-robin) or parked (a lease written by the nack).
--
-- The same lock protocol as transport_claim and transport_ack (001_init.sql): a held claim locks
-- the rows it takes FOR NO KEY UPDATE SKIP LOCKED and never waits; the heads are read in a later
-- statement, whose snapshot sees the previous holder's ack; a drained group is deleted only under
-- its anchor's FOR UPDATE SKIP LOCKED. Rows this transaction already locks do not count as locked
-- for its own SKIP LOCKED, so p_skip names the groups the transaction holds from earlier claims.

-- transport_claim_held is transport_claim without the lease write: it locks up to p_max free
-- groups of priority at least p_min in round-robin order (after p_after_key/p_after_group first,
-- as transport_claim does), skipping p_skip, and returns the head message of each. An empty group
-- on the way is freed (never deleted: this runs inside a caller's transaction) and another taken.
CREATE FUNCTION {schema}transport_claim_held(
    p_now timestamptz, p_min int, p_max int, p_after_key timestamptz, p_after_group text, p_skip text[])
RETURNS TABLE (r_group text, r_priority int, r_seq bigint, r_event text, r_key timestamptz)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    ids text[];
    prios int[];
    keys timestamptz[];
    seqs bigint[];
    events text[];
    skip text[] := COALESCE(p_skip, '{}');
    n int := 0;
    emptied int;
    after_group text := p_after_group;
BEGIN
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
        SELECT m.seq, m.event INTO r_seq, r_event FROM {schema}transport_messages m
        WHERE m.group_id = r_group ORDER BY m.seq LIMIT 1;
        IF NOT FOUND THEN
            SELECT e.r_seq, e.r_event INTO r_seq, r_event
            FROM {schema}transport_settle_empty(r_group, p_now, false) e;
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
        -- What is locked now is held; a later round must not take it again (own locks do not
        -- skip). The heads in a statement of their own, for its later snapshot.
        skip := skip || ids;
        SELECT array_agg(t.group_id), array_agg(t.priority),
            array_agg(COALESCE(t.served_at, '-infinity'::timestamptz)), array_agg(h.seq), array_agg(h.event)
        INTO ids, prios, keys, seqs, events
        FROM {schema}transport_groups t LEFT JOIN LATERAL (
            SELECT m.seq, m.event FROM {schema}transport_messages m
            WHERE m.group_id = t.group_id ORDER BY m.seq LIMIT 1) h ON true
        WHERE t.group_id = ANY (ids);
        emptied := 0;
        FOR i IN 1 .. cardinality(ids) LOOP
            r_group := ids[i];
            r_priority := prios[i];
            r_key := keys[i];
            r_seq := seqs[i];
            r_event := events[i];
            IF r_seq IS NULL THEN
                SELECT e.r_seq, e.r_event INTO r_seq, r_event
                FROM {schema}transport_settle_empty(r_group, p_now, false) e;
                IF r_seq IS NULL THEN
                    emptied := emptied + 1;
                    CONTINUE;
                END IF;
            END IF;
            n := n + 1;
            RETURN NEXT;
        END LOOP;
        EXIT WHEN n >= p_max;
        IF after_group IS NOT NULL THEN
            after_group := NULL;
        ELSIF emptied = 0 THEN
            EXIT;
        END IF;
    END LOOP;
END
$$;

-- transport_ack_held acks messages of groups this transaction holds from transport_claim_held:
-- it deletes each message, then sends each group with messages left to the back of the
-- round-robin and deletes the drained ones (under their anchors, as transport_ack does) or frees
-- those a publisher is filling. No token fence: the caller holds the rows since its claim. It
-- returns how many groups it freed, and notifies p_channel (unless empty) when that is more than
-- none.
CREATE FUNCTION {schema}transport_ack_held(
    p_groups text[], p_seqs bigint[], p_now timestamptz, p_channel text)
RETURNS int LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    kept text[];
    rest text[];
    drained text[];
    gone text[];
    freed int := 0;
    n int;
BEGIN
    IF cardinality(p_groups) = 1 THEN
        DELETE FROM {schema}transport_messages m WHERE m.seq = p_seqs[1] AND m.group_id = p_groups[1];
        UPDATE {schema}transport_groups t SET locked_by = NULL, lease_until = NULL, served_at = p_now
        WHERE t.group_id = p_groups[1] AND EXISTS (SELECT 1 FROM {schema}transport_messages m
                                                   WHERE m.group_id = p_groups[1] AND m.seq > p_seqs[1]);
        IF FOUND THEN
            freed := 1;
        ELSE
            rest := p_groups;
        END IF;
    ELSE
        DELETE FROM {schema}transport_messages m USING unnest(p_groups, p_seqs) AS a(grp, seq)
        WHERE m.seq = a.seq AND m.group_id = a.grp;
        -- Past the acked message only, as transport_ack looks (a concurrently published message
        -- with a lower number sends the group down the checked path below).
        WITH f AS (
            UPDATE {schema}transport_groups t SET locked_by = NULL, lease_until = NULL, served_at = p_now
            FROM unnest(p_groups, p_seqs) AS a(grp, seq)
            WHERE t.group_id = a.grp
              AND EXISTS (SELECT 1 FROM {schema}transport_messages m WHERE m.group_id = a.grp AND m.seq > a.seq)
            RETURNING t.group_id)
        SELECT array_agg(f.group_id) INTO kept FROM f;
        kept := COALESCE(kept, '{}');
        freed := cardinality(kept);
        IF freed < cardinality(p_groups) THEN
            SELECT array_agg(g) INTO rest FROM unnest(p_groups) AS g WHERE g <> ALL (kept);
        END IF;
    END IF;
    IF rest IS NOT NULL THEN
        SELECT array_agg(k.group_id) INTO drained FROM (
            SELECT a.group_id FROM {schema}transport_group_anchors a
            WHERE a.group_id = ANY (rest)
            ORDER BY a.group_id FOR UPDATE SKIP LOCKED) k;
        WITH d AS (
            DELETE FROM {schema}transport_groups t
            WHERE t.group_id = ANY (COALESCE(drained, '{}'))
              AND NOT EXISTS (SELECT 1 FROM {schema}transport_messages m WHERE m.group_id = t.group_id)
            RETURNING t.group_id),
        da AS (
            DELETE FROM {schema}transport_group_anchors a USING d WHERE a.group_id = d.group_id
            RETURNING a.group_id)
        SELECT array_agg(da.group_id) INTO gone FROM da;
        UPDATE {schema}transport_groups t SET locked_by = NULL, lease_until = NULL, served_at = p_now
        WHERE t.group_id = ANY (rest) AND t.group_id <> ALL (COALESCE(gone, '{}'));
        GET DIAGNOSTICS n = ROW_COUNT;
        freed := freed + n;
    END IF;
    IF freed > 0 AND p_channel <> '' THEN
        PERFORM pg_notify(p_channel, '');
    END IF;
    RETURN freed;
END
$$;

-- transport_nack_held hands back a group this transaction holds from transport_claim_held: with
-- p_park NULL at once and at the front of the round-robin (notifying p_channel unless empty, and
-- returning true), else parked until p_park under p_token, a lease that outlives the transaction
-- (and that transport_ack and transport_nack then fence as any other).
CREATE FUNCTION {schema}transport_nack_held(
    p_group text, p_token text, p_park timestamptz, p_channel text)
RETURNS boolean LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
BEGIN
    IF p_park IS NOT NULL THEN
        UPDATE {schema}transport_groups t SET locked_by = p_token, lease_until = p_park
        WHERE t.group_id = p_group;
        RETURN false;
    END IF;
    UPDATE {schema}transport_groups t SET locked_by = NULL, lease_until = NULL, served_at = NULL
    WHERE t.group_id = p_group;
    IF FOUND AND p_channel <> '' THEN
        PERFORM pg_notify(p_channel, '');
    END IF;
    RETURN FOUND;
END
$$;
