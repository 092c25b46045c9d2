package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/sqlitedb"
)

// writer is the store's one connection for writes, pinned out of the database's writer pool,
// with its statements (BEGIN IMMEDIATE and COMMIT included) prepared on it. It is used only
// under the database's write gate (sqlitedb.DB.Lock), which is what makes it exclusive: the gate
// serialises this store's writes with each other and with those of every other component on the
// database.
type writer struct {
	db     *sqlitedb.DB
	closed *atomic.Bool

	conn *sql.Conn // nil until opened, and again after it broke
	st   writeStmts
}

// open takes the connection out of the pool and prepares the statements on it, unless that is
// done already. Called under the gate.
func (w *writer) open(ctx context.Context) error {
	if w.closed.Load() {
		return fmt.Errorf("sqlitestore: %w", stead.ErrClosed)
	}
	if w.conn != nil {
		return nil
	}
	c, err := w.db.W.Conn(ctx)
	if err != nil {
		return err
	}
	w.conn = c
	if err := prepareByName(ctx, c, &w.st); err != nil {
		w.discard()
		return err
	}
	return nil
}

// discard closes the connection's statements and the connection; the next open starts anew.
func (w *writer) discard() {
	closeByName(&w.st)
	if w.conn != nil {
		// Tell database/sql the connection is unusable, so it closes it instead of pooling it.
		w.conn.Raw(func(any) error { return driver.ErrBadConn })
		w.conn.Close()
		w.conn = nil
	}
}

// abort rolls back whatever transaction the connection may be in. A ROLLBACK that fails for any
// reason but "no transaction" leaves the connection in an unknown state: it is discarded.
func (w *writer) abort() {
	if _, err := w.st.TxRollback.ExecContext(bg); err != nil &&
		!strings.Contains(err.Error(), "no transaction is active") {
		w.discard()
	}
}

// tx runs fn between BEGIN IMMEDIATE and COMMIT, opening the connection first if needed. Called
// under the gate.
func (w *writer) tx(ctx context.Context, fn func(*writeStmts) error) error {
	if err := w.open(ctx); err != nil {
		return err
	}
	// No ctx on the statements: the writer connection does not wait for locks (busy_timeout 0),
	// Retry does, and binding ctx would cost the driver a watcher goroutine per statement.
	if _, err := w.st.TxBegin.ExecContext(bg); err != nil {
		w.abort()
		return err
	}
	if err := fn(&w.st); err != nil {
		w.abort()
		return err
	}
	if err := ctx.Err(); err != nil { // the last moment to give up with nothing written
		w.abort()
		return err
	}
	if _, err := w.st.TxCommit.ExecContext(bg); err != nil {
		w.abort()
		return err
	}
	return nil
}

// close releases the connection back to its pool, which the application closes with the
// database. Called under the gate, so no write is in progress.
func (w *writer) close() {
	closeByName(&w.st)
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
}

// bg is the context of statements inside a write transaction and of point reads; see writer.tx
// and backend.read.
var bg = context.Background()
