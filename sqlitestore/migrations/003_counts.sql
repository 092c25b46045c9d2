-- Counting a listing by definition and status (Count, the console's totals): one index holding
-- both columns, so that the GROUP BY walks it in group order and reads no row. The store writes
-- definition_id and status only when they change, so a step that keeps its status never
-- touches it.
CREATE INDEX stead_executions_counts ON stead_executions (definition_id, status);
