-- Claim and ack are called thousands of times a second with parameters whose values do not change
-- the right plan (every statement in them is an index lookup on a primary key or a walk of the
-- round-robin index). Left to plan_cache_mode = auto, PL/pgSQL kept re-planning their statements
-- on every call, because each custom plan looked a little cheaper than the generic one: planning
-- then cost more than executing (measured with pgbench calling claim then ack on a 100,000-message
-- backlog: 761-786 pairs/s with one client and 1,527-1,779 with eight re-planning, 1,155-1,521
-- and 3,074-3,370 with generic plans; EXPLAIN of the generic plans, single and 128-message
-- batches, shows the same index scans as the custom ones).
ALTER FUNCTION {schema}transport_claim(timestamptz, timestamptz, text, int, int)
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION {schema}transport_ack(text[], bigint[], text[], timestamptz, text)
    SET plan_cache_mode = force_generic_plan;
