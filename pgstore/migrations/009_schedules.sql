-- Schedules (package schedule): the configuration is one json document, kept as written, that
-- the store never reads; the columns are what runners query and swap. A runner's claim is a
-- compare-and-swap on next_tick (UPDATE ... WHERE next_tick = $from), which is what makes a tick
-- fire once however many processes run. The partial index answers "what is due" for unpaused
-- schedules only.
CREATE TABLE {schema}stead_schedules (
    id                text COLLATE "C" PRIMARY KEY,
    data              json        NOT NULL,
    paused            boolean     NOT NULL,
    next_tick         timestamptz NOT NULL,
    last_tick         timestamptz,
    last_execution_id text        NOT NULL,
    version           bigint      NOT NULL,
    updated_at        timestamptz NOT NULL
);
CREATE INDEX stead_schedules_due ON {schema}stead_schedules (next_tick) WHERE NOT paused;
