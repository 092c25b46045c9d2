-- Execution attributes (stead.Execution.Attributes): one narrow row per attribute, written in
-- the commit's transaction by the statement sent behind the commit function (sqlCommitAttrs).
-- kind is stead.AttrKind (1 string, 2 int, 3 time, 4 bool); a string is in s, every other kind
-- in n (an integer, unix microseconds, 0 or 1), so that one index serves the three numeric
-- kinds. The two partial indexes answer a condition by key and value and hold the execution id,
-- so a filter or a count reads them alone (an index-only scan); stead_attributes_execution finds
-- an execution's set, which a commit replaces and a purge deletes. It is no primary key on
-- (execution_id, key): the commit that replaces a set holds the execution's row lock, so no two
-- writers interleave, and an index of the id alone is deduplicated by PostgreSQL (an
-- execution's few rows share one entry), about a third of the size. Strings use the "C"
-- collation: they compare byte-wise, as Go compares them. No foreign key, like the other tables
-- of the store.
CREATE TABLE {schema}stead_attributes (
    execution_id text COLLATE "C" NOT NULL,
    key          text COLLATE "C" NOT NULL,
    kind         smallint NOT NULL,
    s            text COLLATE "C",
    n            bigint
);
CREATE INDEX stead_attributes_execution ON {schema}stead_attributes (execution_id);
CREATE INDEX stead_attributes_n ON {schema}stead_attributes (key, kind, n, execution_id) WHERE n IS NOT NULL;
CREATE INDEX stead_attributes_s ON {schema}stead_attributes (key, s, execution_id) WHERE s IS NOT NULL;
