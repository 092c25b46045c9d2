-- Messages wait here, oldest first per group. The lease lives on the group row, never here.
CREATE TABLE IF NOT EXISTS {schema}transport_messages (
    seq      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    group_id text NOT NULL,
    event    text NOT NULL -- the stead.Event as JSON
);
CREATE INDEX IF NOT EXISTS transport_messages_by_group ON {schema}transport_messages (group_id, seq);
-- A queue table: every row is deleted soon after it is inserted, and the head of each group is
-- found past the index entries of the messages acked before it until a vacuum removes them.
-- Vacuum it after 2% of its rows changed instead of autovacuum's default 20%.
ALTER TABLE {schema}transport_messages SET (
    autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02);

-- One row per group that has messages. locked_by is the token of the lease or park holding the
-- group (NULL when free). lock_until is when that lease or park ends; while the group is free it is
-- when the group was last served (NULL: never, or nacked), which is the group's place in the
-- round-robin: never-served groups come first, a group just acked goes to the back.
CREATE TABLE IF NOT EXISTS {schema}transport_groups (
    group_id   text PRIMARY KEY,
    priority   int NOT NULL DEFAULT 0,
    locked_by  text,
    lock_until timestamptz
);
-- Every claim and ack rewrites a group row (never a HOT update: lock_until is indexed), so leave
-- room on each page for the new version and vacuum early.
ALTER TABLE {schema}transport_groups SET (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.02);
CREATE INDEX IF NOT EXISTS transport_groups_claim_order
    ON {schema}transport_groups ((COALESCE(lock_until, '-infinity'::timestamptz)), group_id);
-- Most groups have priority 0: they stay out of this index, so it costs their writes nothing, and
-- a minimum-priority claim reads only the few groups that qualify.
CREATE INDEX IF NOT EXISTS transport_groups_prioritised
    ON {schema}transport_groups (priority, (COALESCE(lock_until, '-infinity'::timestamptz)), group_id)
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
CREATE OR REPLACE FUNCTION {schema}transport_publish(
    p_groups text[], p_events text[], p_priorities int[], p_channel text)
RETURNS boolean LANGUAGE plpgsql AS $$
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

-- transport_claim leases up to p_max groups whose lease is free or over (a lease ending exactly at
-- p_now still holds) and whose priority is at least p_min, in round-robin order, and returns the
-- head message of each. An empty group row found on the way is deleted (or freed if a publisher
-- is filling it) and another group is taken in its place.
CREATE OR REPLACE FUNCTION {schema}transport_claim(
    p_now timestamptz, p_until timestamptz, p_token text, p_min int, p_max int)
RETURNS TABLE (r_group text, r_priority int, r_seq bigint, r_event text)
LANGUAGE plpgsql AS $$
DECLARE
    ids text[];
    prios int[];
    seqs bigint[];
    events text[];
    skip text[] := '{}';
    n int := 0;
    emptied int;
    locked boolean;
BEGIN
    LOOP
        -- Pick and lock the groups. The literal priority > 0 of the first form lets the planner
        -- use the partial index of prioritised groups.
        IF p_min > 0 THEN
            SELECT array_agg(p.group_id) INTO ids FROM (
                SELECT t.group_id FROM {schema}transport_groups t
                WHERE (t.locked_by IS NULL OR t.lock_until < p_now)
                  AND t.priority > 0 AND t.priority >= p_min AND t.group_id <> ALL (skip)
                ORDER BY COALESCE(t.lock_until, '-infinity'::timestamptz), t.group_id
                LIMIT p_max - n
                FOR NO KEY UPDATE SKIP LOCKED) p;
        ELSE
            SELECT array_agg(p.group_id) INTO ids FROM (
                SELECT t.group_id FROM {schema}transport_groups t
                WHERE (t.locked_by IS NULL OR t.lock_until < p_now) AND t.group_id <> ALL (skip)
                ORDER BY COALESCE(t.lock_until, '-infinity'::timestamptz), t.group_id
                LIMIT p_max - n
                FOR NO KEY UPDATE SKIP LOCKED) p;
        END IF;
        EXIT WHEN ids IS NULL;
        -- Lease them and read their heads, in a statement of its own: its snapshot is taken
        -- after the rows were locked, so it sees the ack of whoever held a group just before
        -- (the statement that locked a row may have waited for or skipped past that commit, but
        -- its snapshot predates it and would still show the acked message).
        WITH leased AS (
            UPDATE {schema}transport_groups t SET locked_by = p_token, lock_until = p_until
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
                -- A stale empty group (its last publisher rolled back, or an ack left it to a
                -- publisher that had not committed yet).
                PERFORM 1 FROM {schema}transport_groups t WHERE t.group_id = r_group
                FOR UPDATE SKIP LOCKED;
                locked := FOUND;
                SELECT m.seq, m.event INTO r_seq, r_event FROM {schema}transport_messages m
                WHERE m.group_id = r_group ORDER BY m.seq LIMIT 1;
                IF NOT FOUND THEN
                    IF locked THEN
                        DELETE FROM {schema}transport_groups t WHERE t.group_id = r_group;
                    ELSE
                        UPDATE {schema}transport_groups t SET locked_by = NULL, lock_until = p_now
                        WHERE t.group_id = r_group;
                        skip := skip || r_group;
                    END IF;
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

-- transport_ack deletes each acked message if its lease still holds the group (a stale token
-- changes nothing), then frees the group and sends it to the back of the round-robin, or deletes
-- it when it has no message left. It returns how many groups it freed, and notifies p_channel
-- (unless empty) when that is more than none. Set-based: the number of statements does not grow
-- with the batch.
CREATE OR REPLACE FUNCTION {schema}transport_ack(
    p_groups text[], p_seqs bigint[], p_tokens text[], p_now timestamptz, p_channel text)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    acked text[];
    acked_seqs bigint[];
    drained text[];
    freed int := 0;
    n int;
BEGIN
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
    UPDATE {schema}transport_groups t SET locked_by = NULL, lock_until = p_now
    FROM unnest(acked, acked_seqs) AS a(grp, seq)
    WHERE t.group_id = a.grp
      AND EXISTS (SELECT 1 FROM {schema}transport_messages m WHERE m.group_id = a.grp AND m.seq > a.seq);
    GET DIAGNOSTICS freed = ROW_COUNT;
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
        UPDATE {schema}transport_groups t SET locked_by = NULL, lock_until = p_now
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
CREATE OR REPLACE FUNCTION {schema}transport_nack(
    p_group text, p_token text, p_park timestamptz, p_channel text)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF p_park IS NOT NULL THEN
        UPDATE {schema}transport_groups t SET lock_until = p_park
        WHERE t.group_id = p_group AND t.locked_by = p_token;
        RETURN false;
    END IF;
    UPDATE {schema}transport_groups t SET locked_by = NULL, lock_until = NULL
    WHERE t.group_id = p_group AND t.locked_by = p_token;
    IF FOUND AND p_channel <> '' THEN
        PERFORM pg_notify(p_channel, '');
    END IF;
    RETURN FOUND;
END
$$;
