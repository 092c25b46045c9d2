-- transport_nack, the last function of this package still planned per call, gets the settings of
-- the others (003, 005): one generic plan per connection, index scans and nested loops only. Its
-- statements are updates of one group by primary key.
ALTER FUNCTION {schema}transport_nack(text, text, timestamptz, text)
    SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off;
