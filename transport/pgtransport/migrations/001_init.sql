-- The transport's schema: messages waiting in their groups, one row per group with messages that
-- carries the group's lease and its place in the round-robin, and the group's anchor.
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

-- One anchor per group row, created and deleted with it and never updated. A publish holds the
-- anchors of the groups it appends to FOR KEY SHARE, so that no ack or claim deletes a group before
-- the messages land, and leaves the group rows alone. Were it to hold the group rows instead,
-- claimers could wait: PostgreSQL locks the newer versions of a row that was updated while a
-- FOR KEY SHARE locker was still running, and waits for their holders, even under SKIP LOCKED.
-- That is how a claim deadlocked against a batch ack that held one group and waited for another.
CREATE TABLE {schema}transport_group_anchors (
    group_id text PRIMARY KEY
);

-- Lock protocol, which every function below follows:
--   * only claims, acks and nacks lock group rows. A claim locks the rows it leases FOR NO KEY
--     UPDATE SKIP LOCKED and never waits: a group held by another transaction is skipped;
--   * an ack or a nack locks the rows of its leases FOR NO KEY UPDATE, in id order. It waits only
--     for a claimer that took the group after the lease ran out;
--   * a publish holds the anchors of existing groups FOR KEY SHARE, in id order, and creates the
--     missing groups in id order. It waits only for a transaction that is creating or deleting
--     one of those groups;
--   * a group (its row and its anchor) is deleted only under its anchor's FOR UPDATE SKIP
--     LOCKED, taken after its last message went, and never by a claim inside a caller's
--     transaction: a group a publisher holds is freed instead.
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
    -- Hold the anchors of the existing groups so that no ack or claim deletes them before the
    -- messages land. Nothing else locks an anchor but a delete.
    SELECT array_agg(k.group_id) INTO held FROM (
        SELECT a.group_id FROM {schema}transport_group_anchors a WHERE a.group_id = ANY (wanted)
        ORDER BY a.group_id FOR KEY SHARE) k;
    held := COALESCE(held, '{}');
    IF cardinality(held) < cardinality(wanted) THEN
        -- Create the missing ones. This waits only for another transaction creating or deleting
        -- the same group. A new anchor's group row cannot exist: the two come and go together.
        WITH ins AS (
            INSERT INTO {schema}transport_group_anchors AS a (group_id)
            SELECT w.grp FROM unnest(wanted) AS w(grp)
            WHERE w.grp <> ALL (held) ORDER BY w.grp
            ON CONFLICT (group_id) DO NOTHING
            RETURNING a.group_id)
        SELECT array_agg(ins.group_id) INTO made FROM ins;
        made := COALESCE(made, '{}');
        IF cardinality(made) > 0 THEN
            INSERT INTO {schema}transport_groups (group_id, priority)
            SELECT w.grp, w.prio FROM unnest(wanted, prios) AS w(grp, prio)
            WHERE w.grp = ANY (made) ORDER BY w.grp;
            created := true;
        END IF;
        -- Groups another transaction created (or deleted) meanwhile: one by one until each is held.
        FOR g IN SELECT w.grp, w.prio FROM unnest(wanted, prios) AS w(grp, prio)
                 WHERE w.grp <> ALL (held) AND w.grp <> ALL (made) ORDER BY w.grp
        LOOP
            LOOP
                PERFORM 1 FROM {schema}transport_group_anchors a WHERE a.group_id = g.grp FOR KEY SHARE;
                EXIT WHEN FOUND;
                INSERT INTO {schema}transport_group_anchors (group_id) VALUES (g.grp)
                ON CONFLICT (group_id) DO NOTHING;
                IF FOUND THEN
                    INSERT INTO {schema}transport_groups (group_id, priority) VALUES (g.grp, g.prio);
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
-- the group's head if a message arrived meanwhile; otherwise it deletes the group when p_delete
-- is set and no publisher is filling it, and else frees it (to the back of the round-robin), and
-- returns NULLs. A claim inside a caller's transaction must not delete: the group would stay
-- deleted, and a publish to it from another transaction waiting, until the caller commits, and
-- two such transactions publishing to each other's deleted groups deadlock.
CREATE FUNCTION {schema}transport_settle_empty(
    p_group text, p_now timestamptz, p_delete boolean, OUT r_seq bigint, OUT r_event text)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    locked boolean := false;
BEGIN
    IF p_delete THEN
        PERFORM 1 FROM {schema}transport_group_anchors a WHERE a.group_id = p_group
        FOR UPDATE SKIP LOCKED;
        locked := FOUND;
    END IF;
    SELECT m.seq, m.event INTO r_seq, r_event FROM {schema}transport_messages m
    WHERE m.group_id = p_group ORDER BY m.seq LIMIT 1;
    IF FOUND THEN
        RETURN;
    END IF;
    IF locked THEN
        DELETE FROM {schema}transport_groups t WHERE t.group_id = p_group;
        DELETE FROM {schema}transport_group_anchors a WHERE a.group_id = p_group;
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
-- empty group found on the way is settled (deleted only when p_delete_empty: never inside a
-- caller's transaction) and another taken in its place.
CREATE FUNCTION {schema}transport_claim(
    p_now timestamptz, p_until timestamptz, p_token text, p_min int, p_max int,
    p_after_key timestamptz, p_after_group text, p_delete_empty boolean)
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
            FROM {schema}transport_settle_empty(r_group, p_now, p_delete_empty) e;
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
                FROM {schema}transport_settle_empty(r_group, p_now, p_delete_empty) e;
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
        -- Drained groups are deleted, but only under a lock on their anchors that no publisher
        -- holds: a group a publisher is filling is freed instead of waited for. Once an anchor
        -- is locked, no publisher can reach it until this transaction ends, and the check below
        -- sees every message committed before.
        SELECT array_agg(k.group_id) INTO drained FROM (
            SELECT a.group_id FROM {schema}transport_group_anchors a
            JOIN {schema}transport_groups t ON t.group_id = a.group_id
            WHERE a.group_id = ANY (acked) AND t.locked_by IS NOT NULL
            ORDER BY a.group_id FOR UPDATE OF a SKIP LOCKED) k;
        WITH gone AS (
            DELETE FROM {schema}transport_groups t
            WHERE t.group_id = ANY (drained)
              AND NOT EXISTS (SELECT 1 FROM {schema}transport_messages m WHERE m.group_id = t.group_id)
            RETURNING t.group_id)
        DELETE FROM {schema}transport_group_anchors a USING gone WHERE a.group_id = gone.group_id;
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
