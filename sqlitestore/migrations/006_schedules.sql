-- Schedules (package schedule): the configuration is one JSON document the store never reads;
-- the columns are what runners query and swap. next_tick is unix microseconds; a runner's claim
-- is a compare-and-swap on it (UPDATE ... WHERE next_tick = ?), which is what makes a tick fire
-- once however many processes run. The partial index answers "what is due" for unpaused
-- schedules only.
CREATE TABLE stead_schedules (
    id                TEXT    PRIMARY KEY,
    data              TEXT    NOT NULL,
    paused            INTEGER NOT NULL,
    next_tick         INTEGER NOT NULL,
    last_tick         INTEGER,
    last_execution_id TEXT    NOT NULL,
    version           INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX stead_schedules_due ON stead_schedules (next_tick) WHERE paused = 0;
