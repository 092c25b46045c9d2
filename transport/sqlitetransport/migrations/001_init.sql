CREATE TABLE transport_messages (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused, even after the last row is acked
    group_id TEXT NOT NULL,
    event    TEXT NOT NULL                      -- the stead.Event as JSON
);
CREATE INDEX transport_messages_by_group ON transport_messages (group_id, seq);

-- One row per group with messages. locked_by is the lease or park holder (NULL when free);
-- lock_until (unix microseconds) is when it ends, and while free when the group was last served
-- (NULL: never, or nacked): the round-robin key.
CREATE TABLE transport_groups (
    group_id   TEXT PRIMARY KEY,
    priority   INTEGER NOT NULL DEFAULT 0,
    locked_by  TEXT,
    lock_until INTEGER
) WITHOUT ROWID;
CREATE INDEX transport_groups_claim_order
    ON transport_groups (coalesce(lock_until, -9223372036854775808), group_id);
CREATE INDEX transport_groups_prioritised
    ON transport_groups (priority, coalesce(lock_until, -9223372036854775808), group_id)
    WHERE priority > 0;
