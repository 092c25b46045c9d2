-- stead_notify_finished tells the waiters of worker.Client.Wait that an execution finished: when
-- a row is inserted finished, or its status becomes done, failed or cancelled, it notifies the
-- channel of the table's schema with the execution's id. PostgreSQL sends the notification when
-- the transaction commits, and never for one that rolls back, so a waiter never hears of a finish
-- that did not happen. The triggers' WHEN clauses keep every other commit free of the call; one
-- notification per finished execution is the whole cost.
CREATE FUNCTION {schema}stead_notify_finished() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    channel text := 'stead_finished.' || TG_TABLE_SCHEMA;
BEGIN
    IF octet_length(channel) > 63 THEN -- a channel is an identifier: at most 63 bytes
        channel := 'stead_finished.' || md5(TG_TABLE_SCHEMA);
    END IF;
    PERFORM pg_notify(channel, NEW.id);
    RETURN NULL;
END
$$;

CREATE TRIGGER stead_executions_finished_insert AFTER INSERT ON {schema}stead_executions
FOR EACH ROW WHEN (NEW.status IN ('done', 'failed', 'cancelled'))
EXECUTE FUNCTION {schema}stead_notify_finished();

CREATE TRIGGER stead_executions_finished_update AFTER UPDATE OF status ON {schema}stead_executions
FOR EACH ROW WHEN (NEW.status IN ('done', 'failed', 'cancelled') AND OLD.status IS DISTINCT FROM NEW.status)
EXECUTE FUNCTION {schema}stead_notify_finished();
