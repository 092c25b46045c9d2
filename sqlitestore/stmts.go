package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
)

// The statements are prepared once: the writer's on its pinned connection, the readers' on each
// reader connection by database/sql as it opens them. SQLite then only binds and steps them.
//
// Each field is the statement of the constant named sql followed by the field's name
// (CommitUpdate runs sqlCommitUpdate): prepareByName pairs them by that name, so no field can
// run another's text, and TestStatementsPairByName checks that the fields and the constants of
// sql.go are the same set.

// writeStmts are the statements of write transactions, on the writer connection.
type writeStmts struct {
	TxBegin, TxCommit, TxRollback *sql.Stmt

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

// preparer is a *sql.DB (statements prepared on each pooled connection as needed) or a *sql.Conn
// (statements bound to that connection).
type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// prepareByName fills every field of set, a *writeStmts or a *readStmts, with its statement
// prepared on p. On error the fields already prepared stay set, for closeByName.
func prepareByName(ctx context.Context, p preparer, set any) error {
	v := reflect.ValueOf(set).Elem()
	for i := range v.NumField() {
		name := "sql" + v.Type().Field(i).Name
		text, ok := statements[name]
		if !ok {
			return fmt.Errorf("sqlitestore: no statement %s", name)
		}
		st, err := p.PrepareContext(ctx, text)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		v.Field(i).Set(reflect.ValueOf(st))
	}
	return nil
}

// closeByName closes and clears every prepared field of set.
func closeByName(set any) {
	v := reflect.ValueOf(set).Elem()
	for i := range v.NumField() {
		if st, _ := v.Field(i).Interface().(*sql.Stmt); st != nil {
			st.Close()
			v.Field(i).SetZero()
		}
	}
}
