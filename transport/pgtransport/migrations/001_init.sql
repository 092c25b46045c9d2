-- The transport's schema: messages waiting in their groups, and one row per group with messages
-- that carries the group's lease and its place in the round-robin.
--
-- Every function plans generically, once per connection, and may use only index scans and nested
-- loops: each of their statements is a primary-key lookup or a walk of the round-robin index
-- whatever the size of the tables, and a plan made from the statistics of a young table would
-- otherwise stay for the life of the connection. Why, measured: bench/results/transport.md.

-- Messages wait here, oldest first per group. The lease lives on the group row, never here.
CREATE TABLE {schema}transport_messages (
    seq      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    group_id text NOT NULL,
    event    text NOT NULL -- the stead.Event as JSON
);
CREATE INDEX transport_messages_by_group ON {schema}transport_messages (group_id, seq);
-- A queue table: every row is deleted soon after it is inserted, and the head of each group is
-- found past the index entries of the messages acked before it until a vacuum removes them.
-- Vacuum it after 2% of its rows changed instead of autovacuum's default 20%.
ALTER TABLE {schema}transport_messages SET (
    autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02);

-- One row per group that has messages. locked_by is the token of the lease or park holding the
-- group (NULL when free) and lease_until is when that lease or park ends. served_at is the group's
-- place in the round-robin: when it was last served (NULL: never, or handed back by a nack), so
-- never-served groups come first and a group just acked goes to the back. Only served_at is
-- indexed and only acks and settles write it: a claim or a park changes unindexed columns, which
-- PostgreSQL updates in place (HOT) without new index entries.
CREATE TABLE {schema}transport_groups (
    group_id    text PRIMARY KEY,
    priority    int NOT NULL DEFAULT 0,
    locked_by   text,
    lease_until timestamptz,
    served_at   timestamptz
);
-- Room on each page for the in-place updates, and an early vacuum.
ALTER TABLE {schema}transport_groups SET (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.02);
CREATE INDEX transport_groups_claim_order
    ON {schema}transport_groups ((COALESCE(served_at, '-infinity'::timestamptz)), group_id);
-- Most groups have priority 0: they stay out of this index, so it costs their writes nothing, and
-- a minimum-priority claim reads only the few groups that qualify.
CREATE INDEX transport_groups_prioritised
    ON {schema}transport_groups (priority, (COALESCE(served_at, '-infinity'::timestamptz)), group_id)
    WHERE priority > 0;

-- Lock protocol, which every function below follows and which keeps them from waiting on one
-- another, even inside callers' transactions that stay open:
--   * a claim locks the group rows it leases FOR NO KEY UPDATE SKIP LOCKED: claimers never wait,
--     and a group held by an open transaction is skipped;
--   * a publish holds an existing group row FOR KEY SHARE, which conflicts only with a delete:
--     it never waits for a claimer or an acker; it waits only to create a group that another
--     open transaction is creating or deleting;
--   * an ack locks its groups FOR NO KEY UPDATE where its token still holds them (a fence only a
--     claimer that took the group after the lease ran out can make it wait on);
--   * a group row is deleted only under FOR UPDATE SKIP LOCKED taken after its last message
--     went: if a publisher holds the row, the row is freed instead of waited for.
-- Reads that must see the previous holder's ack (a group's head) run in a statement after the
-- one that locked the row, so that their snapshot is taken after that lock.

-- transport_publish appends the events to their groups in array order and creates missing groups
-- with the given priority (an existing group keeps its own). It notifies p_channel (unless empty)
-- when it created a group, the only case in which a publish makes something claimable that was
-- not, and returns whether it did.
CREATE FUNCTION {schema}transport_publish(
    p_groups text[], p_events text[], p_priorities int[], p_channel text)
RETURNS boolean LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    wanted text[];
    prios int[];
    held text[];
    made text[];
    g record;
    created boolean := false;
BEGIN
    -- Each group once, with the priority of its first message, in id order so that concurrent
    -- batches meet their rows in the same order.
    SELECT array_agg(d.grp ORDER BY d.grp), array_agg(d.prio ORDER BY d.grp) INTO wanted, prios
    FROM (SELECT DISTINCT ON (u.grp) u.grp, u.prio
          FROM unnest(p_groups, p_priorities) WITH ORDINALITY AS u(grp, prio, ord)
          ORDER BY u.grp, u.ord) d;
    -- Hold the existing groups so that no ack or claim deletes them before the messages land.
    -- FOR KEY SHARE does not wait for a claimer or an acker holding a row (they change only
    -- non-key columns), even one whose transaction stays open.
    SELECT array_agg(k.group_id) INTO held FROM (
        SELECT t.group_id FROM {schema}transport_groups t WHERE t.group_id = ANY (wanted)
        ORDER BY t.group_id FOR KEY SHARE) k;
    held := COALESCE(held, '{}');
    IF cardinality(held) < cardinality(wanted) THEN
        -- Create the missing ones. This waits only for another transaction creating or deleting
        -- the same group.
        WITH ins AS (
            INSERT INTO {schema}transport_groups AS t (group_id, priority)
            SELECT w.grp, w.prio FROM unnest(wanted, prios) AS w(grp, prio)
            WHERE w.grp <> ALL (held) ORDER BY w.grp
            ON CONFLICT (group_id) DO NOTHING
            RETURNING t.group_id)
        SELECT array_agg(ins.group_id) INTO made FROM ins;
        made := COALESCE(made, '{}');
        created := cardinality(made) > 0;
        -- Groups another transaction created (or deleted) meanwhile: one by one until each is held.
        FOR g IN SELECT w.grp, w.prio FROM unnest(wanted, prios) AS w(grp, prio)
                 WHERE w.grp <> ALL (held) AND w.grp <> ALL (made) ORDER BY w.grp
        LOOP
            LOOP
                PERFORM 1 FROM {schema}transport_groups t WHERE t.group_id = g.grp FOR KEY SHARE;
                EXIT WHEN FOUND;
                INSERT INTO {schema}transport_groups AS t (group_id, priority) VALUES (g.grp, g.prio)
                ON CONFLICT (group_id) DO NOTHING;
                IF FOUND THEN
                    created := true;
                    EXIT;
                END IF;
            END LOOP;
        END LOOP;
    END IF;
    INSERT INTO {schema}transport_messages (group_id, event)
    SELECT u.grp, u.ev FROM unnest(p_groups, p_events) WITH ORDINALITY AS u(grp, ev, ord)
    ORDER BY u.ord;
    IF created AND p_channel <> '' THEN
        PERFORM pg_notify(p_channel, '');
    END IF;
    RETURN created;
END
$$;

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

-- transport_claim leases up to p_max groups whose lease is free or over (a lease ending exactly at
-- p_now still holds) and whose priority is at least p_min, in round-robin order, and returns the
-- head message of each with the group's place in the round-robin (r_key). p_after_key and
-- p_after_group (NULL: none) are the place of the last group this claimer took: the claim looks
-- after it first, so that it does not walk the dead index entries every ack leaves in front of the
-- live ones, and from the head when nothing is free after it. A claim of one message takes scalar
-- statements, whose plans are cheaper to start than the set-based form's arrays and joins. An
-- empty group found on the way is settled and another taken in its place.
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

-- transport_ack deletes each acked message if its lease still holds the group (a stale token
-- changes nothing), then frees the group and sends it to the back of the round-robin, or deletes
-- it when it has no message left. It returns how many groups it freed, and notifies p_channel
-- (unless empty) when that is more than none. Set-based: the number of statements does not grow
-- with the batch; a batch of one takes scalar statements.
CREATE FUNCTION {schema}transport_ack(
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

-- transport_nack hands the group back if the token still holds it: with p_park NULL at once and
-- at the front of the round-robin (notifying p_channel unless empty, and returning true), else
-- parked (still held by the token) until p_park.
CREATE FUNCTION {schema}transport_nack(
    p_group text, p_token text, p_park timestamptz, p_channel text)
RETURNS boolean LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
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
