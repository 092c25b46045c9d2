-- Counting a listing by definition and status (Count, the console's totals): one index holding
-- both columns, so that the GROUP BY can be an index-only scan in group order.
CREATE INDEX stead_executions_counts ON {schema}stead_executions (definition_id, status);
