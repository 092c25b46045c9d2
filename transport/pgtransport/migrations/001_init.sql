-- The transport's schema: messages waiting in their groups, one row per group with messages that
-- carries the group's lease and its place in the round-robin, the group's anchor, and the flows
-- (limits) that admit keyed groups.
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
--
-- flow_key is the key of a keyed group (see Flows below) and flow_wait its place in its key's
-- queue while it waits for admission (NULL once admitted). No claim writes either, so claims stay
-- in-place (HOT) updates.
CREATE TABLE {schema}transport_groups (
    group_id    text PRIMARY KEY,
    priority    int NOT NULL DEFAULT 0,
    locked_by   text,
    lease_until timestamptz,
    served_at   timestamptz,
    flow_key    text,
    flow_wait   bigint
);
-- Room on each page for the in-place updates, and an early vacuum.
ALTER TABLE {schema}transport_groups SET (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.02);
-- The round-robin, without the groups waiting for admission (see Claim order below).
CREATE INDEX transport_groups_claim_order
    ON {schema}transport_groups ((COALESCE(served_at, '-infinity'::timestamptz)), group_id)
    WHERE flow_wait IS NULL;
-- Most groups have priority 0: they stay out of this index, so it costs their writes nothing, and
-- a minimum-priority claim reads only the few groups that qualify.
CREATE INDEX transport_groups_prioritised
    ON {schema}transport_groups (priority, (COALESCE(served_at, '-infinity'::timestamptz)), group_id)
    WHERE priority > 0 AND flow_wait IS NULL;
-- Keyed groups only: (key, NULL) entries are the admitted ones, which an admission counts, and
-- (key, place) the waiting ones in queue order. Unkeyed groups are not in it, so it costs their
-- writes nothing but the predicate.
CREATE INDEX transport_groups_flow ON {schema}transport_groups (flow_key, flow_wait)
    WHERE flow_key IS NOT NULL;

-- One anchor per group row, created and deleted with it and never updated. A publish holds the
-- anchors of the groups it appends to FOR KEY SHARE, so that no ack or claim deletes a group before
-- the messages land, and leaves the group rows alone. Were it to hold the group rows instead,
-- claimers could wait: PostgreSQL locks the newer versions of a row that was updated while a
-- FOR KEY SHARE locker was still running, and waits for their holders, even under SKIP LOCKED.
-- That is how a claim deadlocked against a batch ack that held one group and waited for another.
--
-- publish_lock is the target of the lock a publish takes on a group found created meanwhile. A
-- publish never writes it: it is there so that the ON CONFLICT DO UPDATE that locks such a group
-- updates (in name) a column that no key covers, for which PostgreSQL locks the row FOR NO KEY
-- UPDATE; updating group_id would lock it FOR UPDATE, which conflicts with other publishers' FOR
-- KEY SHARE.
CREATE TABLE {schema}transport_group_anchors (
    group_id     text PRIMARY KEY,
    publish_lock boolean
);

-- Lock protocol, which every function below follows:
--   * only claims, acks and nacks lock group rows. A claim locks the rows it leases FOR NO KEY
--     UPDATE SKIP LOCKED and never waits: a group held by another transaction is skipped;
--   * an ack or a nack locks the rows of its leases FOR NO KEY UPDATE, in id order. It waits only
--     for a claimer that took the group after the lease ran out;
--   * a publish holds the anchors of the groups it finds FOR KEY SHARE, and then, in one
--     statement in id order, creates each missing group or, when one was created meanwhile, locks
--     its anchor FOR NO KEY UPDATE (ON CONFLICT DO UPDATE ... WHERE false updates nothing and
--     locks the row). Either way the group is held when the statement ends: no deleter, which
--     takes an anchor FOR UPDATE SKIP LOCKED, can take it before the publish's transaction ends;
--     and nothing is left to do out of order;
--   * a publish waits only for a transaction that is creating or deleting one of its groups, or
--     that locked one of them FOR NO KEY UPDATE on the same race (until that transaction ends).
--     The first pass waits only for deleters, which wait for nothing once they hold an anchor:
--     FOR KEY SHARE does not conflict with the creating statement's locks, and an insertion meets
--     a row held FOR KEY SHARE as an existing row, without waiting. What one publish can wait for
--     of another (a created anchor, an anchor locked FOR NO KEY UPDATE) it takes, and waits for,
--     only in the creating statement, in id order: waits between publishes run up the ids and
--     close no cycle. Two transactions that each publish twice can still deadlock, as ever (each
--     publish creates in order, the two together do not), and so can one that deletes a group
--     (an ack of its last message) and then publishes;
--   * a group (its row and its anchor) is deleted only under its anchor's FOR UPDATE SKIP
--     LOCKED, taken after its last message went, and never by a claim inside a caller's
--     transaction: a group a publisher holds is freed instead.
-- Reads that must see the previous holder's ack (a group's head) run in a statement after the
-- one that locked the row, so that their snapshot is taken after that lock.
--
-- Why a publish creates its missing groups in one statement: creating them with INSERT ... ON
-- CONFLICT DO NOTHING holds nothing when it meets a group created meanwhile, and going back for
-- such groups one by one deadlocks. By then the group could have been drained and deleted, and
-- re-created by another publish, which the first then waits for while having created groups of
-- higher ids that the other one waits for in turn. Interleaved, with g1 < g2 < g3 (the steps of
-- TestPublishCreatesGroupsInIDOrder):
--   * publish A to g1, g2, g3 finds none; it waits to create g1 for C, which creates it and
--     commits; A creates g2 and waits to create g3 for another creator;
--   * g1's message is acked: no one holds g1's anchor, and g1 is deleted;
--   * publish B to g1, g2 creates g1 and waits to create g2 for A;
--   * A goes on, finds g1 gone, and waits to create it for B.

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
-- Lock order, which every function follows (the lock protocol above stands):
-- group rows (id order), then transport_flow_groups rows (group order), then key rows
-- (key order, SKIP LOCKED: no wait). A publish, which locks no group row, waits in this order: for
-- the key rows whose limits it changes (key order), for the remembered-key rows of its groups that
-- another transaction is inserting or deleting (a first keyed publish, a Forget), then for anchors
-- as above. A limit change held up by an admitter inside a caller's transaction can so close a
-- cycle only with a transaction that holds the key and then publishes again (as two publishes in
-- one transaction can); PostgreSQL then aborts one of them (stead.ErrConflict).
-- transport_flow_due has no unique constraint, so inserting into it never waits, and only a key's
-- admitter (holding its row) deletes its rows. Forget waits for the holders of its group rows.
--
-- Claim order. Waiting groups stay out of it: the round-robin indexes leave them out
-- (flow_wait IS NULL), and the claims' walks say so, so that a key with a long queue costs the
-- claims nothing and holds at most Concurrency places in the round-robin. No claim writes
-- flow_wait, so a claim's lease write stays in place (HOT). Admission keeps a group's
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
-- rows are still there). See Flows above for the protocol.
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
-- with the given priority (an existing group keeps its own). p_flow_keys (NULL when no message
-- names a flow, else one key or NULL per message) with p_concurrency, p_rate and p_per_us are each
-- message's Flow. For the keys named it records their limits, the last message naming a key giving
-- them (a new key's bucket starts full; a changed one is refilled under its old limits up to p_now
-- and holds no more than its new rate), and remembers the key of each group named with one that
-- has none. A group it creates takes its remembered key and is created waiting; it then admits for
-- those keys and for the keys whose limits changed. A publish that names no flow reads
-- transport_flow_groups only for the groups it creates (one primary-key probe each), and nothing
-- else of flows. It notifies p_channel (unless empty) and returns true when a group became
-- claimable: an unkeyed group created, or a group admitted. That is the only case in which a
-- publish makes something claimable that was not.
--
-- Its order: the new keys, the key rows whose limits change (FOR UPDATE, key order: the only wait
-- on a key row, see Flows), the remembered keys (group order), then the anchors and groups (the
-- lock protocol), then the admission (SKIP LOCKED). A publish takes whatever another publish can
-- wait for in one statement, in id order, a group created (or re-created) under it included.
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
    -- Hold the anchors of the existing groups (the lock protocol, first pass).
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

-- transport_settle_empty handles a group that a claim leased and found without messages (its last
-- publisher rolled back, or an ack left it to a publisher that had not committed yet). It returns
-- the group's head if a message arrived meanwhile; otherwise it deletes the group when p_delete
-- is set and no publisher is filling it, and else frees it (to the back of the round-robin), and
-- returns NULLs. A claim inside a caller's transaction must not delete: the group would stay
-- deleted, and a publish to it from another transaction waiting, until the caller commits, and
-- two such transactions publishing to each other's deleted groups deadlock.
--
-- A keyed group that it does not delete waits again instead of being freed, and either way its
-- admission ends and its key admits. (Inside a caller's transaction, which never deletes, the
-- group may be admitted again at once; the claim skips it, as it skips any group it settled.)
CREATE FUNCTION {schema}transport_settle_empty(
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

-- transport_claim leases up to p_max groups whose lease is free or over (a lease ending exactly at
-- p_now still holds) and whose priority is at least p_min, in round-robin order, and returns the
-- head message of each with the group's place in the round-robin (r_key). p_after_key and
-- p_after_group (NULL: none) are the place of the last group this claimer took: the claim looks
-- after it first, so that it does not walk the dead index entries every ack leaves in front of the
-- live ones, and from the head when nothing is free after it. A claim of one message takes scalar
-- statements, whose plans are cheaper to start than the set-based form's arrays and joins. An
-- empty group found on the way is settled (deleted only when p_delete_empty: never inside a
-- caller's transaction) and another taken in its place.
--
-- Every claim (this one and the held ones below) starts with one probe for due flow keys
-- (transport_flow_wake) and keeps waiting groups out of its walks (flow_wait IS NULL, which the
-- round-robin indexes' predicates require). The walks must read the round-robin index in order
-- and stop at the LIMIT: with bitmap scans allowed, a generic plan made while the table was young
-- read every row after the cursor, then sorted them, on every claim (seen as a quarter of the
-- claims' time, bench/results/flow.md).
CREATE FUNCTION {schema}transport_claim(
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

-- transport_ack deletes each acked message if its lease still holds the group (a stale token
-- changes nothing), then frees the group and sends it to the back of the round-robin, or deletes
-- it when it has no message left. It returns how many groups it freed, and notifies p_channel
-- (unless empty) when that is more than none. Set-based: the number of statements does not grow
-- with the batch; a batch of one takes scalar statements.
--
-- For keyed groups an ack ends a keyed group's admission, so a
-- keyed group with messages left is not freed but waits again, at the back of the round-robin and
-- of its key's queue, and a drained one is deleted as any other (or waits, when a publisher is
-- filling it). Then it admits for the keys of the groups it settled.
-- The drained path's updates set the waiting state only on keyed rows.
--
-- A keyed group with messages left keeps its place instead, freed like an unkeyed one, when
-- nothing of its key waits, its key has no rate (no token to take) and its concurrency was not
-- lowered: given back and admitted again at once, it would end where it is, at the cost of a
-- queue write, the key's lock, a count and an admission. Nothing counts places but the admitted
-- rows themselves, so a group that keeps its place changes no count; an admission racing the
-- ack counts it either way. This is what keeps a limit that does not bind cheap
-- (bench/results/flow.md).
CREATE FUNCTION {schema}transport_ack(
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
        -- Drained groups, and keyed ones: the drained are deleted under their anchors (the lock protocol).
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

-- transport_release frees every group still leased or parked by one of p_tokens, the tokens of
-- claims whose answer never reached their claimer (the connection died during the claim, so the
-- claimer cannot tell whether it committed). Without it such groups stay held until their lease
-- ends although no one will ever process them. Tokens are unique per claim, so a group claimed
-- again since is left alone. It returns how many groups it freed and notifies p_channel (unless
-- empty) when that is more than none.
--
-- The lease token is not indexed (a claim updates it in place, HOT, without index entries), so
-- this reads the whole group table: it runs only after a failed claim, never on the hot path.
CREATE FUNCTION {schema}transport_release(p_tokens text[], p_channel text)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    freed int;
BEGIN
    UPDATE {schema}transport_groups t SET locked_by = NULL, lease_until = NULL
    WHERE t.locked_by = ANY (p_tokens);
    GET DIAGNOSTICS freed = ROW_COUNT;
    IF freed > 0 AND p_channel <> '' THEN
        PERFORM pg_notify(p_channel, '');
    END IF;
    RETURN freed;
END
$$;

-- Claims that write nothing: a claim inside the caller's transaction whose only lease is the
-- transaction's own lock on the group rows (worker/pgtx). Inside a transaction the lease that
-- transport_claim writes is never seen by anyone else before the transaction ends (the row lock
-- keeps every other claimer away meanwhile), and the ack in the same transaction overwrites it: it
-- is a row version written for nothing on every message. Held claims skip it, and their acks and
-- nacks skip the token fence, which the row lock replaces. A group held this way is free again the
-- moment its transaction ends, whether the transaction committed or rolled back, unless it was
-- acked (deleted or sent to the back of the round-robin) or parked (a lease written by the nack).
--
-- The same lock protocol as transport_claim and transport_ack (above): a held claim locks
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

-- transport_ack_held acks messages of groups this transaction holds from transport_claim_held:
-- it deletes each message, then sends each group with messages left to the back of the
-- round-robin and deletes the drained ones (under their anchors, as transport_ack does) or frees
-- those a publisher is filling. No token fence: the caller holds the rows since its claim. It
-- returns how many groups it freed, and notifies p_channel (unless empty) when that is more than
-- none.
--
-- Keyed groups are settled as transport_ack settles them.
CREATE FUNCTION {schema}transport_ack_held(
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

-- Held claims of several messages per group (worker/pgtx's batches): a worker that holds a group for
-- the length of its transaction can apply that group's queued events in order and commit them
-- once, instead of one transaction per event. The same lock protocol as the held claims: the groups are
-- locked by transport_claim_held's own walk, and their messages read in a later statement.

-- transport_claim_held_groups locks groups as transport_claim_held does (it calls it) and returns
-- up to p_max messages in all, at most p_depth consecutive ones of each group from its head, in
-- seq order, the messages of a group adjacent. It takes ceil(rest / p_depth) groups at a time,
-- rest being what the batch still lacks, adds them to the skip list (the transaction's own locks
-- do not count for its SKIP LOCKED) and moves on from the last one's place in the round-robin, as
-- the Go side's cursor does between claims, until the batch is full or a claim came back short
-- (nothing more is claimable). Every group with messages that it locks comes back with at least
-- its head: a round's groups but the last hold at most (ceil(rest / p_depth) - 1) * p_depth < rest
-- messages, so the cut at p_max only shortens the last one. An empty group that
-- transport_claim_held meets on the way it frees and does not return, as ever; a later round may
-- meet it again.
--
-- A group's messages are read in one statement after the lock, from the group's first message,
-- not after the head transport_claim_held returned: seq numbers are handed out at insert and a
-- concurrent publisher may commit a lower one after that head was read. In one snapshot, every
-- message published before a visible one (its publisher committed before the visible one's began)
-- is visible too, so the first p_depth visible messages are a prefix of the group in the order its
-- publishes were made; reading past the earlier head could return a later message ahead of an
-- earlier one that committed in between. The head cannot be gone meanwhile: only the holder of the
-- row deletes messages, and that is this transaction. A lower message committed after this read is
-- a concurrent publish, left for the next claim (transport_ack_held checks every message before
-- deleting a group, as transport_ack does).
--
-- A round that finds its groups shallower than the depth asks the next for as many groups as
-- messages are still wanted.
CREATE FUNCTION {schema}transport_claim_held_groups(
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

-- transport_ack_held_groups acks several messages of each of some groups this transaction holds:
-- p_groups/p_seqs are every acked message but the last of its group, p_last_groups/p_last_seqs
-- the last acked message of each group, each group once. It deletes the former, then acks the
-- latter with transport_ack_held, so that each group is freed (or deleted when drained) once, and
-- its check for messages left looks past the group's last acked message only.
CREATE FUNCTION {schema}transport_ack_held_groups(
    p_groups text[], p_seqs bigint[], p_last_groups text[], p_last_seqs bigint[],
    p_now timestamptz, p_channel text)
RETURNS int LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
BEGIN
    DELETE FROM {schema}transport_messages m USING unnest(p_groups, p_seqs) AS a(grp, seq)
    WHERE m.seq = a.seq AND m.group_id = a.grp;
    RETURN {schema}transport_ack_held(p_last_groups, p_last_seqs, p_now, p_channel);
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
