-- Flows (transport.Flow, transport.Limiter): a keyed group's messages are claimable only while the
-- group is admitted, and a key admits at most Concurrency groups at once and Rate per Per.
--
-- State. transport_flow_keys holds each key's limits (the latest publish naming the key sets them)
-- and its rate bucket; transport_flow_groups remembers a group's key from the first publish that
-- names one until Forget. A group row takes its key (flow_key) when it is created, from the
-- remembered one, and keeps it until it is deleted or forgotten. A keyed group is either
--   * waiting: flow_wait is its place in its key's queue (a sequence: oldest first), and the row
--     carries locked_by = '' and lease_until = 'infinity', which no token is and no lease ends
--     before, so every claim (leased and held) and every fenced ack, nack and extend passes it by
--     without a line of theirs changed; or
--   * admitted: flow_wait is NULL, and the row is a group like any other (free, leased, parked).
-- A key's admitted count is not stored: it is the number of its admitted rows, counted by the
-- admission. So an ack (or a settle, or Forget) that ends an admission changes only the group row
-- it holds anyway, and no one decrements a counter that it would have to lock.
--
-- Admission (transport_flow_admit) locks the key's row FOR UPDATE SKIP LOCKED, and only then, in
-- later statements whose snapshots see every admission committed before (READ COMMITTED takes a
-- snapshot per statement), counts the admitted rows, refills the bucket (transport.Flow.Tokens'
-- formula) and un-gates the oldest waiting groups that the room allows. Admissions of a key are so
-- serialised on its row, and a count can only be too high (an ack not yet committed), never too
-- low: a key never has more groups admitted than its Concurrency, across processes. (An admission
-- writes the key's row, so one in a transaction above READ COMMITTED, whose snapshot could miss
-- the last admission, fails to lock it with a serialization failure rather than over-admit.) Every change
-- that can make room or a waiter (a publish that creates a keyed group or changes a key's limits,
-- an ack, a settle or a Forget of a keyed group) runs an admission of its keys in its own
-- transaction; when a key's row is locked, by an admission that may not see the change, it leaves
-- a row in transport_flow_due for the key, which the next claim handles. A waiting group that an
-- admission skips because a Forget holds its row stays waiting; the Forget admits after it.
--
-- Why SKIP LOCKED on the key rows, and no waits there: an admission can run inside a caller's
-- transaction (worker/pgtx's held claims, publishes and acks) and keep the key's row locked until
-- that transaction ends. Were admissions to wait for the row, two transactions that admit for two
-- keys in opposite orders in separate statements (a step that publishes to a group of one key and
-- then acks a group of another, beside the step doing the reverse) would deadlock. Skipping, they
-- wait for nothing on key rows; the due row guarantees that the admission is not lost, at the
-- cost of a claim's delay. The only statement that waits for a key's row is a publish that changes
-- the key's limits (rare: limits are declared once and re-declared unchanged), and it takes them in
-- key order before any group or anchor. Nor does a publish upsert the keys it names: an INSERT ...
-- ON CONFLICT that meets an existing key waits for the transaction that last updated its row (an
-- admission does), so steps that publish to each other's keys deadlocked on it; it reads them
-- first and inserts only the missing ones, which waits only for another first publish of the key.
--
-- Rates. An admission that leaves groups waiting only for a token writes a due row for the moment
-- the next one is due (transport.Flow.TokenDue's formula). Every claim function starts with one
-- probe of transport_flow_due's due_at index (empty without flows, or when nothing is due) and,
-- when a row is due, admits for its keys: a group held back by the rate is admitted at the latest
-- at the first claim after its token is due. Wait finds it at its next poll.
--
-- Lock order, which every function follows (001_init's and 005_publish_order's protocol stands):
-- group rows (id order, as before), then transport_flow_groups rows (group order), then key rows
-- (key order, SKIP LOCKED: no wait). A publish, which locks no group row, waits in this order: for
-- the key rows whose limits it changes (key order), for the remembered-key rows of its groups that
-- another transaction is inserting or deleting (a first keyed publish, a Forget), then for anchors
-- as 005 does. A limit change held up by an admitter inside a caller's transaction can so close a
-- cycle only with a transaction that holds the key and then publishes again (as two publishes in
-- one transaction could before); PostgreSQL then aborts one of them (stead.ErrConflict).
-- transport_flow_due has no unique constraint, so inserting into it never waits, and only a key's
-- admitter (holding its row) deletes its rows. Forget waits for the holders of its group rows.
--
-- Claim order. Waiting groups stay out of it: the round-robin indexes are rebuilt without them
-- (flow_wait IS NULL), and the claims' walks say so, so that a key with a long queue costs the
-- claims nothing and holds at most Concurrency places in the round-robin. No claim writes
-- flow_wait, so a claim's lease write stays in place (HOT) as before. Admission keeps a group's
-- served_at, so it takes its place in the round-robin where its last service left it; an ack that
-- ends the admission of a group with messages left sends it to the back of the round-robin and of
-- its key's queue.

CREATE TABLE {schema}transport_flow_keys (
    key         text PRIMARY KEY,
    concurrency int NOT NULL,
    rate        int NOT NULL,
    per_us      bigint NOT NULL,           -- Per in microseconds, 0 without a rate
    tokens      float8 NOT NULL,           -- the rate bucket at tokens_at
    tokens_at   timestamptz NOT NULL,
    -- Set when a publish lowered the concurrency, until an admission finds the key within it:
    -- meanwhile an ack does not let a group keep its place (transport_ack).
    lowered     boolean NOT NULL DEFAULT false
);

CREATE TABLE {schema}transport_flow_groups (
    group_id text PRIMARY KEY,
    key      text NOT NULL
);

-- Keys to admit for at the next claim: due_at is -infinity for an admission that found the key's
-- row locked, or when the key's next rate token is due.
CREATE TABLE {schema}transport_flow_due (
    key    text NOT NULL,
    due_at timestamptz NOT NULL
);
CREATE INDEX transport_flow_due_at ON {schema}transport_flow_due (due_at);
CREATE INDEX transport_flow_due_key ON {schema}transport_flow_due (key);

CREATE SEQUENCE {schema}transport_flow_wait;

-- Adding nullable columns without a default rewrites nothing. The index holds keyed groups only:
-- (key, NULL) entries are the admitted ones, which an admission counts, and (key, place) the
-- waiting ones in queue order. No claim writes flow_key or flow_wait, so claims stay in-place
-- (HOT) updates; unkeyed groups are not in it, so it costs their writes nothing but the predicate.
ALTER TABLE {schema}transport_groups ADD COLUMN flow_key text, ADD COLUMN flow_wait bigint;
CREATE INDEX transport_groups_flow ON {schema}transport_groups (flow_key, flow_wait)
    WHERE flow_key IS NOT NULL;
-- The round-robin indexes of 001_init, without the waiting groups (see Claim order above).
DROP INDEX {schema}transport_groups_claim_order;
CREATE INDEX transport_groups_claim_order
    ON {schema}transport_groups ((COALESCE(served_at, '-infinity'::timestamptz)), group_id)
    WHERE flow_wait IS NULL;
DROP INDEX {schema}transport_groups_prioritised;
CREATE INDEX transport_groups_prioritised
    ON {schema}transport_groups (priority, (COALESCE(served_at, '-infinity'::timestamptz)), group_id)
    WHERE priority > 0 AND flow_wait IS NULL;

-- transport_flow_tokens is transport.Flow.Tokens: what a bucket holding p_tokens at p_at holds at
-- p_now, refilled continuously at p_rate per p_per_us microseconds, up to p_rate.
CREATE FUNCTION {schema}transport_flow_tokens(
    p_tokens float8, p_at timestamptz, p_rate int, p_per_us bigint, p_now timestamptz)
RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_rate = 0 THEN 0::float8 ELSE least(p_tokens + CASE WHEN p_now > p_at
        THEN p_rate::float8 * (extract(epoch FROM p_now - p_at)::float8 * 1e6) / p_per_us
        ELSE 0 END, p_rate::float8) END
$$;

-- transport_flow_admit admits, for each of p_keys whose row it can lock, the oldest waiting groups
-- that the key's room allows now, and returns how many it admitted. A key whose row another
-- transaction holds gets a due row when p_nudge is set (the claims' probe passes false: its due
-- rows are still there). See the top of this file for the protocol.
CREATE FUNCTION {schema}transport_flow_admit(p_keys text[], p_now timestamptz, p_nudge boolean)
RETURNS int LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    k text;
    f record;
    cand text[];
    done text[] := '{}';
    free bigint;
    room bigint;
    toks float8;
    got int;
    total int := 0;
BEGIN
    -- A key with nothing waiting has nothing to admit: it is not locked (a shared transaction
    -- would hold it to its end, and every other admission of the key would turn into a due row
    -- for the claims), and its due rows go — in one statement, whose snapshot sees a waiting
    -- group if it sees the due row committed with it.
    DELETE FROM {schema}transport_flow_due d WHERE d.key = ANY (p_keys)
      AND NOT EXISTS (SELECT 1 FROM {schema}transport_groups t
                      WHERE t.flow_key = d.key AND t.flow_wait IS NOT NULL);
    SELECT array_agg(DISTINCT u.k) INTO cand FROM unnest(p_keys) AS u(k)
    WHERE EXISTS (SELECT 1 FROM {schema}transport_groups t WHERE t.flow_key = u.k AND t.flow_wait IS NOT NULL);
    IF cand IS NULL THEN
        RETURN 0;
    END IF;
    FOR k IN SELECT x.key FROM {schema}transport_flow_keys x WHERE x.key = ANY (cand)
             ORDER BY x.key FOR UPDATE SKIP LOCKED
    LOOP
        done := done || k;
        -- Its due rows are handled now. Deleted before the count, so that the change of whoever
        -- left one is in the count's later snapshot; one committed after this stays.
        DELETE FROM {schema}transport_flow_due d WHERE d.key = k;
        SELECT x.concurrency, x.rate, x.per_us, x.tokens, x.tokens_at, x.lowered INTO f
        FROM {schema}transport_flow_keys x WHERE x.key = k;
        free := 2147483647;
        IF f.concurrency > 0 THEN
            -- One past the limit, to see a key over a lowered limit (free < 0).
            SELECT f.concurrency - count(*) INTO free FROM (
                SELECT 1 FROM {schema}transport_groups t
                WHERE t.flow_key = k AND t.flow_wait IS NULL LIMIT f.concurrency + 1) a;
        END IF;
        IF f.lowered AND free >= 0 THEN
            UPDATE {schema}transport_flow_keys x SET lowered = false WHERE x.key = k;
        END IF;
        room := free;
        IF f.rate > 0 THEN
            toks := {schema}transport_flow_tokens(f.tokens, f.tokens_at, f.rate, f.per_us, p_now);
            room := least(room, floor(toks)::bigint);
        END IF;
        got := 0;
        IF room > 0 THEN
            WITH pick AS (
                SELECT t.group_id FROM {schema}transport_groups t
                WHERE t.flow_key = k AND t.flow_wait IS NOT NULL
                ORDER BY t.flow_wait LIMIT room
                FOR NO KEY UPDATE SKIP LOCKED)
            UPDATE {schema}transport_groups t SET locked_by = NULL, lease_until = NULL, flow_wait = NULL
            FROM pick WHERE t.group_id = pick.group_id;
            GET DIAGNOSTICS got = ROW_COUNT;
            total := total + got;
        END IF;
        IF f.rate = 0 AND got > 0 THEN
            -- Written although the bucket is unused, so that an admission in a transaction above
            -- READ COMMITTED that would count from a snapshot older than this one fails on the
            -- row (a serialization failure) instead of over-admitting.
            UPDATE {schema}transport_flow_keys x SET tokens_at = greatest(x.tokens_at, p_now)
            WHERE x.key = k;
        END IF;
        IF f.rate > 0 THEN
            toks := toks - got;
            UPDATE {schema}transport_flow_keys x SET tokens = toks, tokens_at = greatest(x.tokens_at, p_now)
            WHERE x.key = k;
            -- Held back by the rate alone: due when the next token is (transport.Flow.TokenDue).
            IF toks < 1 AND free > got AND EXISTS (
                SELECT 1 FROM {schema}transport_groups t WHERE t.flow_key = k AND t.flow_wait IS NOT NULL)
            THEN
                INSERT INTO {schema}transport_flow_due (key, due_at)
                VALUES (k, p_now + (floor((1 - toks) * f.per_us / f.rate) + 1) * interval '1 microsecond');
            END IF;
        END IF;
    END LOOP;
    IF p_nudge AND cardinality(done) < cardinality(cand) THEN
        INSERT INTO {schema}transport_flow_due (key, due_at)
        SELECT DISTINCT u.k, '-infinity'::timestamptz FROM unnest(cand) AS u(k)
        WHERE u.k IS NOT NULL AND u.k <> ALL (done);
    END IF;
    RETURN total;
END
$$;

-- transport_flow_wake admits for the keys that are due at p_now (a few at a time): the claims'
-- probe calls it when one is.
CREATE FUNCTION {schema}transport_flow_wake(p_now timestamptz)
RETURNS int LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
BEGIN
    RETURN {schema}transport_flow_admit(ARRAY(
        SELECT DISTINCT d.key FROM (
            SELECT d.key FROM {schema}transport_flow_due d WHERE d.due_at <= p_now
            ORDER BY d.due_at LIMIT 64) d), p_now, false);
END
$$;

-- transport_publish appends the events to their groups in array order and creates missing groups
-- with the given priority (an existing group keeps its own), as 005_publish_order's did, and now
-- honours flows: p_flow_keys (NULL when no message names a flow, else one key or NULL per message)
-- with p_concurrency, p_rate and p_per_us are each message's Flow. For the keys named it records
-- their limits, the last message naming a key giving them (a new key's bucket starts full; a
-- changed one is refilled under its old limits up to p_now and holds no more than its new rate),
-- and remembers the key of each group named with one that has none. A group it creates takes its
-- remembered key and is created waiting; it then admits for those keys and for the keys whose
-- limits changed. A publish that names no flow reads transport_flow_groups only for the groups it
-- creates (one primary-key probe each), and nothing else of flows. It notifies p_channel (unless
-- empty) and returns true when a group became claimable: an unkeyed group created, or a group
-- admitted.
--
-- Its order: the new keys, the key rows whose limits change (FOR UPDATE, key order: the only wait
-- on a key row, see the top), the remembered keys (group order), then the anchors and groups as
-- before, then the admission (SKIP LOCKED).
CREATE FUNCTION {schema}transport_publish(
    p_groups text[], p_events text[], p_priorities int[], p_channel text, p_now timestamptz,
    p_flow_keys text[], p_concurrency int[], p_rate int[], p_per_us bigint[])
RETURNS boolean LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    wanted text[];
    prios int[];
    held text[];
    made text[];
    missing text[];
    changed text[];
    gated text[];
    created boolean := false;
BEGIN
    IF p_flow_keys IS NOT NULL THEN
        -- The keys named, with the limits of the last message naming each, and what is stored of
        -- them: a plain read, which waits for nothing (an INSERT ... ON CONFLICT would wait for
        -- whoever updated a key's row, an admission that may hold it until its transaction ends).
        -- Keys are never deleted, so one read here exists.
        SELECT array_agg(l.k) FILTER (WHERE x.key IS NULL),
            array_agg(l.k) FILTER (WHERE x.key IS NOT NULL
                AND (x.concurrency, x.rate, x.per_us) IS DISTINCT FROM (l.c, l.r, l.p))
        INTO missing, changed
        FROM (SELECT DISTINCT ON (u.k) u.k, u.c, u.r, u.p
              FROM unnest(p_flow_keys, p_concurrency, p_rate, p_per_us) WITH ORDINALITY AS u(k, c, r, p, ord)
              WHERE u.k IS NOT NULL ORDER BY u.k, u.ord DESC) l
        LEFT JOIN {schema}transport_flow_keys x ON x.key = l.k;
        IF missing IS NOT NULL THEN
            -- New keys, with a full bucket, in key order. One another publish inserted meanwhile
            -- (this waited for it) is checked for changed limits below.
            WITH ins AS (
                INSERT INTO {schema}transport_flow_keys AS x (key, concurrency, rate, per_us, tokens, tokens_at)
                SELECT l.k, l.c, l.r, l.p, l.r, p_now FROM (
                    SELECT DISTINCT ON (u.k) u.k, u.c, u.r, u.p
                    FROM unnest(p_flow_keys, p_concurrency, p_rate, p_per_us) WITH ORDINALITY AS u(k, c, r, p, ord)
                    WHERE u.k = ANY (missing) ORDER BY u.k, u.ord DESC) l
                ORDER BY l.k
                ON CONFLICT (key) DO NOTHING
                RETURNING x.key)
            SELECT COALESCE(changed, '{}') || array_agg(m) INTO changed
            FROM unnest(missing) AS m WHERE m NOT IN (SELECT ins.key FROM ins);
        END IF;
        IF changed IS NOT NULL THEN
            -- Changed limits: only these lock their key's row, and wait for it (key order).
            WITH latest AS (
                SELECT DISTINCT ON (u.k) u.k, u.c, u.r, u.p
                FROM unnest(p_flow_keys, p_concurrency, p_rate, p_per_us) WITH ORDINALITY AS u(k, c, r, p, ord)
                WHERE u.k = ANY (changed) ORDER BY u.k, u.ord DESC),
            locked AS (
                SELECT x.key FROM {schema}transport_flow_keys x JOIN latest l ON l.k = x.key
                WHERE (x.concurrency, x.rate, x.per_us) IS DISTINCT FROM (l.c, l.r, l.p)
                ORDER BY x.key FOR UPDATE OF x)
            SELECT array_agg(locked.key) INTO changed FROM locked;
        END IF;
        IF changed IS NOT NULL THEN
            UPDATE {schema}transport_flow_keys x SET concurrency = l.c, rate = l.r, per_us = l.p,
                lowered = x.lowered OR (l.c > 0 AND (x.concurrency = 0 OR l.c < x.concurrency)),
                tokens = least({schema}transport_flow_tokens(x.tokens, x.tokens_at, x.rate, x.per_us, p_now), l.r),
                tokens_at = greatest(x.tokens_at, p_now)
            FROM (SELECT DISTINCT ON (u.k) u.k, u.c, u.r, u.p
                  FROM unnest(p_flow_keys, p_concurrency, p_rate, p_per_us) WITH ORDINALITY AS u(k, c, r, p, ord)
                  WHERE u.k = ANY (changed) ORDER BY u.k, u.ord DESC) l
            WHERE x.key = l.k;
        END IF;
        -- Each group's key, from the first message naming one, unless it has one.
        INSERT INTO {schema}transport_flow_groups (group_id, key)
        SELECT r.g, r.k FROM (
            SELECT DISTINCT ON (u.g) u.g, u.k
            FROM unnest(p_groups, p_flow_keys) WITH ORDINALITY AS u(g, k, ord)
            WHERE u.k IS NOT NULL ORDER BY u.g, u.ord) r
        ORDER BY r.g
        ON CONFLICT (group_id) DO NOTHING;
    END IF;
    -- Each group once, with the priority of its first message, in id order.
    SELECT array_agg(d.grp ORDER BY d.grp), array_agg(d.prio ORDER BY d.grp) INTO wanted, prios
    FROM (SELECT DISTINCT ON (u.grp) u.grp, u.prio
          FROM unnest(p_groups, p_priorities) WITH ORDINALITY AS u(grp, prio, ord)
          ORDER BY u.grp, u.ord) d;
    -- Hold the anchors of the existing groups (005_publish_order).
    SELECT array_agg(k.group_id) INTO held FROM (
        SELECT a.group_id FROM {schema}transport_group_anchors a WHERE a.group_id = ANY (wanted)
        ORDER BY a.group_id FOR KEY SHARE) k;
    held := COALESCE(held, '{}');
    IF cardinality(held) < cardinality(wanted) THEN
        WITH ins AS (
            INSERT INTO {schema}transport_group_anchors AS a (group_id)
            SELECT w.grp FROM unnest(wanted) AS w(grp)
            WHERE w.grp <> ALL (held) ORDER BY w.grp
            ON CONFLICT (group_id) DO UPDATE SET publish_lock = NULL WHERE false
            RETURNING a.group_id)
        SELECT array_agg(ins.group_id) INTO made FROM ins;
        IF made IS NOT NULL THEN
            -- A group with a remembered key is created waiting, at the back of its key's queue.
            WITH ins AS (
                INSERT INTO {schema}transport_groups (group_id, priority, flow_key, locked_by, lease_until, flow_wait)
                SELECT n.grp, n.prio, n.k, CASE WHEN n.k IS NOT NULL THEN '' END,
                    CASE WHEN n.k IS NOT NULL THEN 'infinity'::timestamptz END,
                    CASE WHEN n.k IS NOT NULL THEN nextval('{schema}transport_flow_wait') END
                FROM (SELECT w.grp, w.prio, fg.key AS k FROM unnest(wanted, prios) AS w(grp, prio)
                      LEFT JOIN {schema}transport_flow_groups fg ON fg.group_id = w.grp
                      WHERE w.grp = ANY (made) ORDER BY w.grp) n
                RETURNING flow_key)
            SELECT COALESCE(bool_or(ins.flow_key IS NULL), false),
                array_agg(DISTINCT ins.flow_key) FILTER (WHERE ins.flow_key IS NOT NULL)
            INTO created, gated FROM ins;
        END IF;
    END IF;
    INSERT INTO {schema}transport_messages (group_id, event)
    SELECT u.grp, u.ev FROM unnest(p_groups, p_events) WITH ORDINALITY AS u(grp, ev, ord)
    ORDER BY u.ord;
    IF gated IS NOT NULL OR changed IS NOT NULL THEN
        IF {schema}transport_flow_admit(COALESCE(gated, '{}') || COALESCE(changed, '{}'), p_now, true) > 0 THEN
            created := true;
        END IF;
    END IF;
    IF created AND p_channel <> '' THEN
        PERFORM pg_notify(p_channel, '');
    END IF;
    RETURN created;
END
$$;

-- 005's signature stays, for processes of the previous version during a rolling upgrade: it names
-- no flow and, lacking the client's clock, reads the database's.
CREATE OR REPLACE FUNCTION {schema}transport_publish(
    p_groups text[], p_events text[], p_priorities int[], p_channel text)
RETURNS boolean LANGUAGE sql AS $$
    SELECT {schema}transport_publish(p_groups, p_events, p_priorities, p_channel, statement_timestamp(),
        NULL::text[], NULL::int[], NULL::int[], NULL::bigint[])
$$;

-- transport_ack, as 001_init's, for keyed groups too: an ack ends a keyed group's admission, so a
-- keyed group with messages left is not freed but waits again, at the back of the round-robin and
-- of its key's queue, and a drained one is deleted as any other (or waits, when a publisher is
-- filling it). Then it admits for the keys of the groups it settled. The unkeyed path is 001's,
-- and the drained path's updates set the waiting state only on keyed rows.
--
-- A keyed group with messages left keeps its place instead, freed like an unkeyed one, when
-- nothing of its key waits, its key has no rate (no token to take) and its concurrency was not
-- lowered: given back and admitted again at once, it would end where it is, at the cost of a
-- queue write, the key's lock, a count and an admission. Nothing counts places but the admitted
-- rows themselves, so a group that keeps its place changes no count; an admission racing the
-- ack counts it either way. This is what keeps a limit that does not bind cheap
-- (bench/results/flow.md).
CREATE OR REPLACE FUNCTION {schema}transport_ack(
    p_groups text[], p_seqs bigint[], p_tokens text[], p_now timestamptz, p_channel text)
RETURNS int LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    acked text[];
    acked_seqs bigint[];
    drained text[];
    keys text[];
    more text[];
    freed int := 0;
    n int;
BEGIN
    IF cardinality(p_groups) = 1 THEN
        PERFORM 1 FROM {schema}transport_groups t
        WHERE t.group_id = p_groups[1] AND t.locked_by = p_tokens[1] FOR NO KEY UPDATE;
        IF NOT FOUND THEN
            RETURN 0;
        END IF;
        DELETE FROM {schema}transport_messages m WHERE m.seq = p_seqs[1] AND m.group_id = p_groups[1];
        acked := p_groups;
        UPDATE {schema}transport_groups t SET locked_by = NULL, lease_until = NULL, served_at = p_now
        WHERE t.group_id = p_groups[1] AND (t.flow_key IS NULL OR (
              NOT EXISTS (SELECT 1 FROM {schema}transport_groups w
                          WHERE w.flow_key = t.flow_key AND w.flow_wait IS NOT NULL)
              AND EXISTS (SELECT 1 FROM {schema}transport_flow_keys x
                          WHERE x.key = t.flow_key AND x.rate = 0 AND NOT x.lowered)))
          AND EXISTS (SELECT 1 FROM {schema}transport_messages m
                      WHERE m.group_id = p_groups[1] AND m.seq > p_seqs[1]);
        GET DIAGNOSTICS freed = ROW_COUNT;
    ELSE
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
        UPDATE {schema}transport_groups t SET locked_by = NULL, lease_until = NULL, served_at = p_now
        FROM unnest(acked, acked_seqs) AS a(grp, seq)
        WHERE t.group_id = a.grp AND (t.flow_key IS NULL OR (
              NOT EXISTS (SELECT 1 FROM {schema}transport_groups w
                          WHERE w.flow_key = t.flow_key AND w.flow_wait IS NOT NULL)
              AND EXISTS (SELECT 1 FROM {schema}transport_flow_keys x
                          WHERE x.key = t.flow_key AND x.rate = 0 AND NOT x.lowered)))
          AND EXISTS (SELECT 1 FROM {schema}transport_messages m WHERE m.group_id = a.grp AND m.seq > a.seq);
        GET DIAGNOSTICS freed = ROW_COUNT;
    END IF;
    IF freed < cardinality(acked) THEN
        -- Drained groups, and keyed ones: the drained are deleted under their anchors (001_init).
        SELECT array_agg(k.group_id) INTO drained FROM (
            SELECT a.group_id FROM {schema}transport_group_anchors a
            JOIN {schema}transport_groups t ON t.group_id = a.group_id
            WHERE a.group_id = ANY (acked) AND t.locked_by IS NOT NULL
            ORDER BY a.group_id FOR UPDATE OF a SKIP LOCKED) k;
        WITH gone AS (
            DELETE FROM {schema}transport_groups t
            WHERE t.group_id = ANY (drained)
              AND NOT EXISTS (SELECT 1 FROM {schema}transport_messages m WHERE m.group_id = t.group_id)
            RETURNING t.group_id, t.flow_key),
        ga AS (
            DELETE FROM {schema}transport_group_anchors a USING gone WHERE a.group_id = gone.group_id)
        SELECT array_agg(DISTINCT gone.flow_key) FILTER (WHERE gone.flow_key IS NOT NULL) INTO keys
        FROM gone;
        -- The rest are freed, or wait again when keyed.
        WITH f AS (
            UPDATE {schema}transport_groups t
            SET locked_by = CASE WHEN t.flow_key IS NOT NULL THEN '' END,
                lease_until = CASE WHEN t.flow_key IS NOT NULL THEN 'infinity'::timestamptz END,
                served_at = p_now,
                flow_wait = CASE WHEN t.flow_key IS NOT NULL THEN nextval('{schema}transport_flow_wait') END
            WHERE t.group_id = ANY (acked) AND t.locked_by IS NOT NULL
            RETURNING t.flow_key)
        SELECT count(*) FILTER (WHERE f.flow_key IS NULL),
            array_agg(DISTINCT f.flow_key) FILTER (WHERE f.flow_key IS NOT NULL)
        INTO n, more FROM f;
        freed := freed + n;
        IF keys IS NOT NULL OR more IS NOT NULL THEN
            freed := freed + {schema}transport_flow_admit(
                COALESCE(keys, '{}') || COALESCE(more, '{}'), p_now, true);
        END IF;
    END IF;
    IF freed > 0 AND p_channel <> '' THEN
        PERFORM pg_notify(p_channel, '');
    END IF;
    RETURN freed;
END
$$;

-- transport_ack_held, as 003_held's, with the same change as transport_ack above.
CREATE OR REPLACE FUNCTION {schema}transport_ack_held(
    p_groups text[], p_seqs bigint[], p_now timestamptz, p_channel text)
RETURNS int LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    kept text[];
    rest text[];
    drained text[];
    gone text[];
    keys text[];
    more text[];
    freed int := 0;
    n int;
BEGIN
    IF cardinality(p_groups) = 1 THEN
        DELETE FROM {schema}transport_messages m WHERE m.seq = p_seqs[1] AND m.group_id = p_groups[1];
        UPDATE {schema}transport_groups t SET locked_by = NULL, lease_until = NULL, served_at = p_now
        WHERE t.group_id = p_groups[1] AND (t.flow_key IS NULL OR (
              NOT EXISTS (SELECT 1 FROM {schema}transport_groups w
                          WHERE w.flow_key = t.flow_key AND w.flow_wait IS NOT NULL)
              AND EXISTS (SELECT 1 FROM {schema}transport_flow_keys x
                          WHERE x.key = t.flow_key AND x.rate = 0 AND NOT x.lowered)))
          AND EXISTS (SELECT 1 FROM {schema}transport_messages m
                      WHERE m.group_id = p_groups[1] AND m.seq > p_seqs[1]);
        IF FOUND THEN
            freed := 1;
        ELSE
            rest := p_groups;
        END IF;
    ELSE
        DELETE FROM {schema}transport_messages m USING unnest(p_groups, p_seqs) AS a(grp, seq)
        WHERE m.seq = a.seq AND m.group_id = a.grp;
        WITH f AS (
            UPDATE {schema}transport_groups t SET locked_by = NULL, lease_until = NULL, served_at = p_now
            FROM unnest(p_groups, p_seqs) AS a(grp, seq)
            WHERE t.group_id = a.grp AND (t.flow_key IS NULL OR (
              NOT EXISTS (SELECT 1 FROM {schema}transport_groups w
                          WHERE w.flow_key = t.flow_key AND w.flow_wait IS NOT NULL)
              AND EXISTS (SELECT 1 FROM {schema}transport_flow_keys x
                          WHERE x.key = t.flow_key AND x.rate = 0 AND NOT x.lowered)))
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
            RETURNING t.group_id, t.flow_key),
        da AS (
            DELETE FROM {schema}transport_group_anchors a USING d WHERE a.group_id = d.group_id
            RETURNING a.group_id)
        SELECT array_agg(d.group_id), array_agg(DISTINCT d.flow_key) FILTER (WHERE d.flow_key IS NOT NULL)
        INTO gone, keys FROM d;
        WITH f AS (
            UPDATE {schema}transport_groups t
            SET locked_by = CASE WHEN t.flow_key IS NOT NULL THEN '' END,
                lease_until = CASE WHEN t.flow_key IS NOT NULL THEN 'infinity'::timestamptz END,
                served_at = p_now,
                flow_wait = CASE WHEN t.flow_key IS NOT NULL THEN nextval('{schema}transport_flow_wait') END
            WHERE t.group_id = ANY (rest) AND t.group_id <> ALL (COALESCE(gone, '{}'))
            RETURNING t.flow_key)
        SELECT count(*) FILTER (WHERE f.flow_key IS NULL),
            array_agg(DISTINCT f.flow_key) FILTER (WHERE f.flow_key IS NOT NULL)
        INTO n, more FROM f;
        freed := freed + n;
        IF keys IS NOT NULL OR more IS NOT NULL THEN
            freed := freed + {schema}transport_flow_admit(
                COALESCE(keys, '{}') || COALESCE(more, '{}'), p_now, true);
        END IF;
    END IF;
    IF freed > 0 AND p_channel <> '' THEN
        PERFORM pg_notify(p_channel, '');
    END IF;
    RETURN freed;
END
$$;

-- transport_settle_empty, as 001_init's: a keyed group that a claim found empty and does not
-- delete waits again instead of being freed, and either way its admission ends and its key
-- admits. (Inside a caller's transaction, which never deletes, the group may be admitted again
-- at once; the claim skips it, as it skips any group it settled.)
CREATE OR REPLACE FUNCTION {schema}transport_settle_empty(
    p_group text, p_now timestamptz, p_delete boolean, OUT r_seq bigint, OUT r_event text)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    locked boolean := false;
    fk text;
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
        DELETE FROM {schema}transport_groups t WHERE t.group_id = p_group RETURNING t.flow_key INTO fk;
        DELETE FROM {schema}transport_group_anchors a WHERE a.group_id = p_group;
    ELSE
        UPDATE {schema}transport_groups t
        SET locked_by = CASE WHEN t.flow_key IS NOT NULL THEN '' END,
            lease_until = CASE WHEN t.flow_key IS NOT NULL THEN 'infinity'::timestamptz END,
            served_at = p_now,
            flow_wait = CASE WHEN t.flow_key IS NOT NULL THEN nextval('{schema}transport_flow_wait') END
        WHERE t.group_id = p_group RETURNING t.flow_key INTO fk;
    END IF;
    IF fk IS NOT NULL THEN
        PERFORM {schema}transport_flow_admit(ARRAY[fk], p_now, true);
    END IF;
END
$$;

-- transport_flow_forget drops the remembered keys of p_groups: an admitted group gives its place
-- back and stays as it is otherwise (claimable, leased or parked), a waiting one becomes claimable
-- at once, both unlimited until they are deleted; then it admits for their keys. It waits for
-- whoever holds the group rows (a claim in a caller's transaction holds them until that ends). It
-- returns how many groups became claimable, and notifies p_channel (unless empty) when some did.
CREATE FUNCTION {schema}transport_flow_forget(p_groups text[], p_now timestamptz, p_channel text)
RETURNS int LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    keys text[];
    freed int;
BEGIN
    PERFORM 1 FROM {schema}transport_groups t
    WHERE t.group_id = ANY (p_groups) AND t.flow_key IS NOT NULL
    ORDER BY t.group_id FOR NO KEY UPDATE;
    -- In a statement of its own, whose snapshot sees the rows as their last holders left them.
    WITH o AS (
        SELECT t.group_id, t.flow_key, t.flow_wait FROM {schema}transport_groups t
        WHERE t.group_id = ANY (p_groups) AND t.flow_key IS NOT NULL),
    f AS (
        UPDATE {schema}transport_groups t SET flow_key = NULL, flow_wait = NULL,
            locked_by = CASE WHEN o.flow_wait IS NULL THEN t.locked_by END,
            lease_until = CASE WHEN o.flow_wait IS NULL THEN t.lease_until END
        FROM o WHERE t.group_id = o.group_id
        RETURNING o.flow_key, o.flow_wait)
    SELECT array_agg(DISTINCT f.flow_key), count(*) FILTER (WHERE f.flow_wait IS NOT NULL)
    INTO keys, freed FROM f;
    DELETE FROM {schema}transport_flow_groups fg WHERE fg.group_id = ANY (p_groups);
    IF keys IS NOT NULL THEN
        freed := freed + {schema}transport_flow_admit(keys, p_now, true);
    END IF;
    IF freed > 0 AND p_channel <> '' THEN
        PERFORM pg_notify(p_channel, '');
    END IF;
    RETURN freed;
END
$$;

-- The claims, as 001_init's and 003_held's, with the probe for due keys first and waiting groups
-- out of their walks (flow_wait IS NULL, which the round-robin indexes' predicates require).
-- Their walks must read the round-robin index in order and stop at the LIMIT: with bitmap scans
-- allowed, a generic plan made while the table was young read every row after the cursor, then
-- sorted them, on every claim (seen as a quarter of the claims' time, bench/results/flow.md).
CREATE OR REPLACE FUNCTION {schema}transport_claim(
    p_now timestamptz, p_until timestamptz, p_token text, p_min int, p_max int,
    p_after_key timestamptz, p_after_group text, p_delete_empty boolean)
RETURNS TABLE (r_group text, r_priority int, r_seq bigint, r_event text, r_key timestamptz)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET enable_bitmapscan = off AS $$
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
    -- Keys that are due for admission (a rate token came due, or an admission that found its key
    -- busy left them for later): one probe of an index that stays empty without flows.
    IF EXISTS (SELECT 1 FROM {schema}transport_flow_due d WHERE d.due_at <= p_now) THEN
        PERFORM {schema}transport_flow_wake(p_now);
    END IF;
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
              AND (t.locked_by IS NULL OR t.lease_until < p_now) AND t.flow_wait IS NULL AND t.group_id <> ALL (skip)
            ORDER BY COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id
            LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED;
        END IF;
        IF r_group IS NULL AND p_min > 0 THEN
            -- The literal priority > 0 lets the planner use the partial index of prioritised groups.
            SELECT t.group_id, t.priority, COALESCE(t.served_at, '-infinity'::timestamptz)
            INTO r_group, r_priority, r_key FROM {schema}transport_groups t
            WHERE (t.locked_by IS NULL OR t.lease_until < p_now)
              AND t.priority > 0 AND t.priority >= p_min AND t.flow_wait IS NULL AND t.group_id <> ALL (skip)
            ORDER BY COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id
            LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED;
        ELSIF r_group IS NULL THEN
            SELECT t.group_id, t.priority, COALESCE(t.served_at, '-infinity'::timestamptz)
            INTO r_group, r_priority, r_key FROM {schema}transport_groups t
            WHERE (t.locked_by IS NULL OR t.lease_until < p_now) AND t.flow_wait IS NULL AND t.group_id <> ALL (skip)
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
                  AND (t.locked_by IS NULL OR t.lease_until < p_now) AND t.flow_wait IS NULL AND t.group_id <> ALL (skip)
                ORDER BY COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id
                LIMIT p_max - n
                FOR NO KEY UPDATE SKIP LOCKED) p;
        END IF;
        IF ids IS NULL AND p_min > 0 THEN
            SELECT array_agg(p.group_id) INTO ids FROM (
                SELECT t.group_id FROM {schema}transport_groups t
                WHERE (t.locked_by IS NULL OR t.lease_until < p_now)
                  AND t.priority > 0 AND t.priority >= p_min AND t.flow_wait IS NULL AND t.group_id <> ALL (skip)
                ORDER BY COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id
                LIMIT p_max - n
                FOR NO KEY UPDATE SKIP LOCKED) p;
        ELSIF ids IS NULL THEN
            after_group := NULL;
            SELECT array_agg(p.group_id) INTO ids FROM (
                SELECT t.group_id FROM {schema}transport_groups t
                WHERE (t.locked_by IS NULL OR t.lease_until < p_now) AND t.flow_wait IS NULL AND t.group_id <> ALL (skip)
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

CREATE OR REPLACE FUNCTION {schema}transport_claim_held(
    p_now timestamptz, p_min int, p_max int, p_after_key timestamptz, p_after_group text, p_skip text[])
RETURNS TABLE (r_group text, r_priority int, r_seq bigint, r_event text, r_key timestamptz)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET enable_bitmapscan = off AS $$
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
    -- Keys that are due for admission (a rate token came due, or an admission that found its key
    -- busy left them for later): one probe of an index that stays empty without flows.
    IF EXISTS (SELECT 1 FROM {schema}transport_flow_due d WHERE d.due_at <= p_now) THEN
        PERFORM {schema}transport_flow_wake(p_now);
    END IF;
    IF p_min > 0 THEN
        after_group := NULL;
    END IF;
    WHILE p_max = 1 LOOP
        r_group := NULL;
        IF after_group IS NOT NULL THEN
            SELECT t.group_id, t.priority, COALESCE(t.served_at, '-infinity'::timestamptz)
            INTO r_group, r_priority, r_key FROM {schema}transport_groups t
            WHERE (COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id) > (p_after_key, after_group)
              AND (t.locked_by IS NULL OR t.lease_until < p_now) AND t.flow_wait IS NULL AND t.group_id <> ALL (skip)
            ORDER BY COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id
            LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED;
        END IF;
        IF r_group IS NULL AND p_min > 0 THEN
            SELECT t.group_id, t.priority, COALESCE(t.served_at, '-infinity'::timestamptz)
            INTO r_group, r_priority, r_key FROM {schema}transport_groups t
            WHERE (t.locked_by IS NULL OR t.lease_until < p_now)
              AND t.priority > 0 AND t.priority >= p_min AND t.flow_wait IS NULL AND t.group_id <> ALL (skip)
            ORDER BY COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id
            LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED;
        ELSIF r_group IS NULL THEN
            SELECT t.group_id, t.priority, COALESCE(t.served_at, '-infinity'::timestamptz)
            INTO r_group, r_priority, r_key FROM {schema}transport_groups t
            WHERE (t.locked_by IS NULL OR t.lease_until < p_now) AND t.flow_wait IS NULL AND t.group_id <> ALL (skip)
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
                  AND (t.locked_by IS NULL OR t.lease_until < p_now) AND t.flow_wait IS NULL AND t.group_id <> ALL (skip)
                ORDER BY COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id
                LIMIT p_max - n
                FOR NO KEY UPDATE SKIP LOCKED) p;
        END IF;
        IF ids IS NULL AND p_min > 0 THEN
            SELECT array_agg(p.group_id) INTO ids FROM (
                SELECT t.group_id FROM {schema}transport_groups t
                WHERE (t.locked_by IS NULL OR t.lease_until < p_now)
                  AND t.priority > 0 AND t.priority >= p_min AND t.flow_wait IS NULL AND t.group_id <> ALL (skip)
                ORDER BY COALESCE(t.served_at, '-infinity'::timestamptz), t.group_id
                LIMIT p_max - n
                FOR NO KEY UPDATE SKIP LOCKED) p;
        ELSIF ids IS NULL THEN
            after_group := NULL;
            SELECT array_agg(p.group_id) INTO ids FROM (
                SELECT t.group_id FROM {schema}transport_groups t
                WHERE (t.locked_by IS NULL OR t.lease_until < p_now) AND t.flow_wait IS NULL AND t.group_id <> ALL (skip)
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

-- transport_claim_held_groups, as 004_held_groups's, but a round that finds its groups shallower
-- than the depth asks the next for as many groups as messages are still wanted. (Its own walks
-- are transport_claim_held's, above, which keep waiting groups out.)
CREATE OR REPLACE FUNCTION {schema}transport_claim_held_groups(
    p_now timestamptz, p_min int, p_max int, p_depth int,
    p_after_key timestamptz, p_after_group text, p_skip text[])
RETURNS TABLE (r_group text, r_priority int, r_seq bigint, r_event text, r_key timestamptz)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    skip text[] := COALESCE(p_skip, '{}');
    after_key timestamptz := p_after_key;
    after_group text := p_after_group;
    ids text[];
    prios int[];
    keys timestamptz[];
    last_key timestamptz;
    last_group text;
    want int;
    n int := 0;
    got int;
    shallow boolean := false;
BEGIN
    IF p_depth <= 1 THEN
        RETURN QUERY SELECT c.r_group, c.r_priority, c.r_seq, c.r_event, c.r_key
            FROM {schema}transport_claim_held(p_now, p_min, p_max, after_key, after_group, skip) c;
        RETURN;
    END IF;
    LOOP
        want := (p_max - n + p_depth - 1) / p_depth;
        IF shallow THEN
            want := p_max - n;
        END IF;
        SELECT array_agg(c.r_group), array_agg(c.r_priority), array_agg(c.r_key),
            (array_agg(c.r_key ORDER BY c.r_key DESC, c.r_group DESC))[1],
            (array_agg(c.r_group ORDER BY c.r_key DESC, c.r_group DESC))[1]
        INTO ids, prios, keys, last_key, last_group
        FROM {schema}transport_claim_held(p_now, p_min, want, after_key, after_group, skip) c;
        EXIT WHEN ids IS NULL;
        skip := skip || ids;
        RETURN QUERY
            SELECT g.grp, g.prio, x.seq, x.event, g.k
            FROM unnest(ids, prios, keys) WITH ORDINALITY AS g(grp, prio, k, ord)
            CROSS JOIN LATERAL (
                SELECT m.seq, m.event FROM {schema}transport_messages m
                WHERE m.group_id = g.grp ORDER BY m.seq LIMIT p_depth) x
            ORDER BY g.ord, x.seq
            LIMIT p_max - n;
        GET DIAGNOSTICS got = ROW_COUNT;
        n := n + got;
        EXIT WHEN n >= p_max OR cardinality(ids) < want;
        -- Groups shallower than the depth (one event each, in a queue of independent jobs): the
        -- next round asks for a group per message still wanted, instead of p_max / p_depth
        -- groups a round, which took sixteen rounds to fill a batch of one-message groups.
        IF got < cardinality(ids) * p_depth THEN
            shallow := true;
        END IF;
        after_key := last_key;
        after_group := last_group;
    END LOOP;
END
$$;
