-- The trace context of a spawn intent (stead.Spawn.Trace): the start event of a child that a
-- relay creates after a crash carries it, so that the child joins its parent's trace as it does
-- when the committing worker creates it. Empty for none, as Event.Trace.
ALTER TABLE stead_spawns ADD COLUMN trace TEXT NOT NULL DEFAULT '';
