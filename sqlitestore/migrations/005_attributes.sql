-- Execution attributes (stead.Execution.Attributes): one narrow row per attribute, written in
-- the commit that sets them. kind is stead.AttrKind (1 string, 2 int, 3 time, 4 bool); a string
-- is in s, every other kind in n (an integer, unix microseconds, 0 or 1), so that one index
-- serves the three numeric kinds. The primary key is the execution's set, which a commit
-- replaces and a purge deletes; the two partial indexes answer conditions by key and value and
-- yield execution ids. Strings compare byte-wise (BINARY), as Go compares them.
CREATE TABLE stead_attributes (
    execution_id TEXT    NOT NULL REFERENCES stead_executions (id) ON DELETE CASCADE,
    key          TEXT    NOT NULL,
    kind         INTEGER NOT NULL,
    s            TEXT,
    n            INTEGER,
    PRIMARY KEY (execution_id, key)
) WITHOUT ROWID;
CREATE INDEX stead_attributes_n ON stead_attributes (key, kind, n) WHERE n IS NOT NULL;
CREATE INDEX stead_attributes_s ON stead_attributes (key, s) WHERE s IS NOT NULL;
