-- Listing by finish time (the retention sweep, an operator's "finished before"): the finished
-- roots in id order with their finish time, so that a page of finished roots walks this index
-- from the cursor on and tests the finish time without reading the rows it skips. Only roots
-- that finished are in it, and an execution enters it once, when it finishes: the commits of a
-- running execution never touch it (the store writes parent_id and finished_at only when they
-- change, like definition_id and status).
CREATE INDEX stead_executions_finished_roots ON stead_executions (id, finished_at)
    WHERE parent_id = '' AND finished_at IS NOT NULL;
