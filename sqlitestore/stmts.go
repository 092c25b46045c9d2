package sqlitestore

import "database/sql"

// The statements are prepared once: the writes' on the database's writer connection
// (sqlitedb.DB.PrepareWrites), the reads' on each reader connection by database/sql as it opens
// them. SQLite then only binds and steps them.
//
// Each field is the statement of the constant named sql followed by the field's name
// (CommitUpdate runs sqlCommitUpdate): sqlitedb.PrepareByName pairs them by that name, so no
// field can run another's text, and TestStatementsPairByName checks that the fields and the
// constants of sql.go are the same set.

// writeStmts are the statements of write transactions, on the database's writer connection:
// they run inside its write transactions only (sqlitedb.DB.Write and Begin), which begin and
// commit themselves.
type writeStmts struct {
	CommitInsert, CommitUpdate, CommitIndexed, CommitVersion *sql.Stmt
	CommitEmit, CommitProcessed, CommitSpawn                 *sql.Stmt
	CommitSchedule, CommitCancel                             *sql.Stmt
	CommitAttrsClear, CommitAttr                             *sql.Stmt
	AppendTrace, AppendTraceTrim                             *sql.Stmt

	Purge, PurgeProcessed, PurgeTimers, PurgeTrace, PurgeOutbox, PurgeSpawns, PurgeAttrs *sql.Stmt

	ClaimOutbox, AckOutbox, ClaimSpawns, AckSpawns, DeleteTimer *sql.Stmt
}

// readStmts are the statements of reads, on the reader pool.
type readStmts struct {
	Load, LoadForEvent, LoadForEvents, IsProcessed *sql.Stmt
	ReadTrace, Timers, DueTimers, CursorKey        *sql.Stmt

	PendingOutbox, PendingOutboxBySource, PendingSpawns, PendingSpawnsByParent *sql.Stmt

	StoreStatsBacklog *sql.Stmt
}
