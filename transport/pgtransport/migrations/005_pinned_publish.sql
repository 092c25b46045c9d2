-- transport_publish gets the settings of claim and ack (003): one generic plan per connection,
-- index scans and nested loops only. Left to plan_cache_mode = auto it planned its statements
-- afresh on every call, and on a young table chose a sequential scan of transport_groups.
ALTER FUNCTION {schema}transport_publish(text[], text[], int[], text)
    SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off;
