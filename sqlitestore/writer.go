package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/steadhq/stead"
)

// writer is the one connection every write runs on, pinned out of the writer pool, with its
// statements (BEGIN IMMEDIATE and COMMIT included) prepared on it. A goroutine holds it through
// the slot in sem. See the package documentation for how ctx applies. For an in-memory database
// the same connection also serves reads (memory is set): the database lives on that connection.
type writer struct {
	sem    chan struct{}
	db     *sql.DB
	memory bool
	closed *atomic.Bool

	conn                    *sql.Conn // nil until first use, and again after it broke
	opened                  bool
	begin, commit, rollback *sql.Stmt
	w                       writeStmts
	r                       readStmts // memory only
}

// acquire takes the writer for the caller, opening and preparing the connection if needed.
func (w *writer) acquire(ctx context.Context) error {
	select {
	case w.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if w.closed.Load() {
		<-w.sem
		return fmt.Errorf("sqlitestore: %w", stead.ErrClosed)
	}
	if w.conn != nil {
		return nil
	}
	if w.memory && w.opened {
		<-w.sem // a new connection would open a new, empty database
		return fmt.Errorf("sqlitestore: %w: the in-memory database was lost with its connection", stead.ErrUnavailable)
	}
	w.opened = true
	if err := w.open(ctx); err != nil {
		w.discard()
		<-w.sem
		return err
	}
	return nil
}

func (w *writer) release() { <-w.sem }

func (w *writer) open(ctx context.Context) error {
	c, err := w.db.Conn(ctx)
	if err != nil {
		return err
	}
	w.conn = c
	ctl := []**sql.Stmt{&w.begin, &w.commit, &w.rollback}
	if err := prepareAll(ctx, c, ctl, []string{`BEGIN IMMEDIATE`, `COMMIT`, `ROLLBACK`}); err != nil {
		return err
	}
	if err := w.w.prepare(ctx, c); err != nil {
		return err
	}
	if w.memory {
		return w.r.prepare(ctx, c)
	}
	return nil
}

// discard closes the connection's statements and the connection; the next acquire opens anew.
func (w *writer) discard() {
	closeAll(append([]**sql.Stmt{&w.begin, &w.commit, &w.rollback}, append(w.w.all(), w.r.all()...)...))
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
	if _, err := w.rollback.ExecContext(context.Background()); err != nil &&
		!strings.Contains(err.Error(), "no transaction is active") {
		w.discard()
	}
}

// tx runs fn between BEGIN IMMEDIATE and COMMIT on the acquired writer.
func (w *writer) tx(ctx context.Context, fn func(*writeStmts) error) error {
	// No ctx here: the writer connection does not wait for locks (busy_timeout 0), Retry does.
	if _, err := w.begin.ExecContext(bg); err != nil {
		w.abort()
		return err
	}
	if err := fn(&w.w); err != nil {
		w.abort()
		return err
	}
	if err := ctx.Err(); err != nil { // the last moment to give up with nothing written
		w.abort()
		return err
	}
	if _, err := w.commit.ExecContext(context.Background()); err != nil {
		w.abort()
		return err
	}
	return nil
}

// close waits for the write in progress, then releases the connection back to its pool, which
// the caller closes next. Writers still queued find the store closed.
func (w *writer) close() {
	w.sem <- struct{}{}
	defer func() { <-w.sem }()
	closeAll(append([]**sql.Stmt{&w.begin, &w.commit, &w.rollback}, append(w.w.all(), w.r.all()...)...))
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
}

// bg is the context of statements inside a write transaction; see writer.
var bg = context.Background()

// write runs fn in one write transaction and commits it. fn must have no effect outside the
// transaction: a transaction that found the database locked by another process is rolled back
// and run again, within the busy timeout.
//
// Errors: what fn returns (conflicts, invalid input) comes back as it is. Every other error
// means nothing was written: a lock held elsewhere past the busy timeout, or a deadline that
// passed while waiting, wraps ErrUnavailable; a cancelled ctx is returned as its error.
func (s *Store) write(ctx context.Context, fn func(*writeStmts) error) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	err := s.retry(ctx, func() error {
		if err := s.wr.acquire(ctx); err != nil {
			return err
		}
		defer s.wr.release()
		return s.wr.tx(ctx, fn)
	})
	if err == nil || isSentinel(err) {
		return err
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w (%w)", ctxErr, err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("sqlitestore: %w: nothing written: %w", stead.ErrUnavailable, err)
		}
		return fmt.Errorf("sqlitestore: nothing written: %w", err)
	}
	return s.classify(err)
}
