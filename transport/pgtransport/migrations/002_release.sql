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
