-- Listing by finish time (the retention sweep, an operator's "finished before"): the finished
-- roots in id order with their finish time, so that a page of finished roots walks this index
-- from the cursor on and tests the finish time in the index, without visiting the rows it skips.
-- An execution enters it once, when it finishes; the commits of a running execution change none
-- of its columns, so they stay HOT updates.
CREATE INDEX stead_executions_finished_roots ON {schema}stead_executions (id, finished_at)
    WHERE parent_id IS NULL AND finished_at IS NOT NULL;
