CREATE TABLE transport_messages (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused, even after the last row is acked
    group_id TEXT NOT NULL,
    event    TEXT NOT NULL                      -- the stead.Event as JSON
);
CREATE INDEX transport_messages_by_group ON transport_messages (group_id, seq);

-- One row per group with messages. locked_by is the lease or park holder (NULL when free);
-- lock_until (unix microseconds) is when it ends, and while free when the group was last served
-- (NULL: never, or nacked): the round-robin key.
--
-- flow_key is the key a group is limited by (NULL: unlimited), taken from its remembered key when
-- the group is created. wait_seq is set while a keyed group waits for admission: its place in its
-- key's queue. A waiting group keeps lock_until, its place in the round-robin, for when it is
-- admitted, and stays out of the claim order's indexes, so claims never walk it.
CREATE TABLE transport_groups (
    group_id   TEXT PRIMARY KEY,
    priority   INTEGER NOT NULL DEFAULT 0,
    locked_by  TEXT,
    lock_until INTEGER,
    flow_key   TEXT,
    wait_seq   INTEGER
) WITHOUT ROWID;
CREATE INDEX transport_groups_claim_order
    ON transport_groups (coalesce(lock_until, -9223372036854775808), group_id)
    WHERE wait_seq IS NULL;
CREATE INDEX transport_groups_prioritised
    ON transport_groups (priority, coalesce(lock_until, -9223372036854775808), group_id)
    WHERE priority > 0 AND wait_seq IS NULL;
CREATE INDEX transport_groups_waiting ON transport_groups (flow_key, wait_seq) WHERE wait_seq IS NOT NULL;

-- Flows (transport.Flow). One row per key ever named: its limits as the latest keyed publish
-- declared them, how many of its groups are admitted, and its rate bucket (tokens as computed at
-- tokens_at, unix microseconds). due_at (unix microseconds) is set while groups of the key wait
-- for a rate token only: when the next one is due. Claims probe the keys whose due_at passed.
CREATE TABLE transport_flow_keys (
    flow_key    TEXT PRIMARY KEY,
    concurrency INTEGER NOT NULL, -- 0: no limit
    rate        INTEGER NOT NULL, -- 0: no limit
    per_us      INTEGER NOT NULL, -- the rate's period in microseconds; 0 without a rate
    admitted    INTEGER NOT NULL,
    tokens      REAL    NOT NULL,
    tokens_at   INTEGER NOT NULL,
    due_at      INTEGER
) WITHOUT ROWID;
CREATE INDEX transport_flow_keys_due ON transport_flow_keys (due_at) WHERE due_at IS NOT NULL;

-- A group's remembered key, from the first publish that named one until the group is forgotten.
CREATE TABLE transport_flow_groups (
    group_id TEXT PRIMARY KEY,
    flow_key TEXT NOT NULL
) WITHOUT ROWID;
