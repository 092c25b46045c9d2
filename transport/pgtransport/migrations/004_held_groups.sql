-- Held claims of several messages per group (ClaimHeldGroupsTx): a worker that holds a group for
-- the length of its transaction can apply that group's queued events in order and commit them
-- once, instead of one transaction per event. The same lock protocol as 003_held: the groups are
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
BEGIN
    IF p_depth <= 1 THEN
        RETURN QUERY SELECT c.r_group, c.r_priority, c.r_seq, c.r_event, c.r_key
            FROM {schema}transport_claim_held(p_now, p_min, p_max, after_key, after_group, skip) c;
        RETURN;
    END IF;
    LOOP
        want := (p_max - n + p_depth - 1) / p_depth;
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
