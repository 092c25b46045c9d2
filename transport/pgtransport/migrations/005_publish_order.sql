-- A publish takes whatever another publish can wait for in one statement, in id order, a group
-- created (or re-created) under it included.
--
-- transport_publish of 001_init created the groups it did not find with INSERT ... ON CONFLICT DO
-- NOTHING, which holds nothing when it meets a group created meanwhile, and then went back for
-- such groups one by one. By then the group could have been drained and deleted, and re-created
-- by another publish, which the first now waited for while having created groups of higher ids
-- that the other one waited for in turn: a deadlock. Interleaved, with g1 < g2 < g3 (the steps of
-- TestPublishCreatesGroupsInIDOrder):
--   * publish A to g1, g2, g3 finds none; it waits to create g1 for C, which creates it and
--     commits; A creates g2 and waits to create g3 for another creator;
--   * g1's message is acked: no one holds g1's anchor, and g1 is deleted;
--   * publish B to g1, g2 creates g1 and waits to create g2 for A;
--   * A goes on, finds g1 gone, and waits to create it for B.
--
-- Lock protocol, which replaces the publish's part of 001_init's (the rest stands):
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
--     (an ack of its last message) and then publishes.

-- The lock's target. A publish never writes it: it is there so that the ON CONFLICT DO UPDATE
-- that locks a group found created meanwhile updates (in name) a column that no key covers, for
-- which PostgreSQL locks the row FOR NO KEY UPDATE; updating group_id would lock it FOR UPDATE,
-- which conflicts with other publishers' FOR KEY SHARE. Adding a nullable column without a default
-- rewrites nothing, and a NULL in the anchor's only other column leaves its row size as it was.
ALTER TABLE {schema}transport_group_anchors ADD COLUMN publish_lock boolean;

-- transport_publish appends the events to their groups in array order and creates missing groups
-- with the given priority (an existing group keeps its own). It notifies p_channel (unless empty)
-- when it created a group, the only case in which a publish makes something claimable that was
-- not, and returns whether it did. Its statements are 001_init's less the retry loop: three when it
-- finds every group, five when it creates some (and the notification).
CREATE OR REPLACE FUNCTION {schema}transport_publish(
    p_groups text[], p_events text[], p_priorities int[], p_channel text)
RETURNS boolean LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    wanted text[];
    prios int[];
    held text[];
    made text[];
    created boolean := false;
BEGIN
    -- Each group once, with the priority of its first message, in id order.
    SELECT array_agg(d.grp ORDER BY d.grp), array_agg(d.prio ORDER BY d.grp) INTO wanted, prios
    FROM (SELECT DISTINCT ON (u.grp) u.grp, u.prio
          FROM unnest(p_groups, p_priorities) WITH ORDINALITY AS u(grp, prio, ord)
          ORDER BY u.grp, u.ord) d;
    -- Hold the anchors of the existing groups so that no ack or claim deletes them before the
    -- messages land. This waits only for a deleter of one of them; one deleted meanwhile is
    -- created below.
    SELECT array_agg(k.group_id) INTO held FROM (
        SELECT a.group_id FROM {schema}transport_group_anchors a WHERE a.group_id = ANY (wanted)
        ORDER BY a.group_id FOR KEY SHARE) k;
    held := COALESCE(held, '{}');
    IF cardinality(held) < cardinality(wanted) THEN
        -- Create the missing ones, in id order, and lock those another transaction created
        -- meanwhile (see the lock protocol above): each is held when this ends. An insertion
        -- that meets a group being created or deleted waits for that transaction and then
        -- inserts or locks. A new anchor's group row cannot exist: the two come and go together.
        WITH ins AS (
            INSERT INTO {schema}transport_group_anchors AS a (group_id)
            SELECT w.grp FROM unnest(wanted) AS w(grp)
            WHERE w.grp <> ALL (held) ORDER BY w.grp
            ON CONFLICT (group_id) DO UPDATE SET publish_lock = NULL WHERE false
            RETURNING a.group_id)
        SELECT array_agg(ins.group_id) INTO made FROM ins;
        IF made IS NOT NULL THEN
            INSERT INTO {schema}transport_groups (group_id, priority)
            SELECT w.grp, w.prio FROM unnest(wanted, prios) AS w(grp, prio)
            WHERE w.grp = ANY (made) ORDER BY w.grp;
            created := true;
        END IF;
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
