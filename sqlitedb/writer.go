package sqlitedb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// The writer: one connection of W per DB, pinned for the DB's life, on which every component
// prepares its write statements and runs its write transactions. One connection is what lets a
// store and a transport on one file write in one transaction (Begin): both run their own
// statements between one BEGIN IMMEDIATE and one COMMIT. SQLite has one writer per file anyway,
// and the gate already serialises the writes of the process, so one connection costs no
// concurrency.
//
// Transactions are BEGIN IMMEDIATE and COMMIT statements on that connection, not database/sql's
// *sql.Tx: a *sql.Tx starts a goroutine watching its context, and Tx.StmtContext re-prepares a
// statement that was prepared on a *sql.Conn (database/sql reuses only those of the pool), so
// every statement would be prepared again in every transaction. The gate makes the connection
// exclusive instead: whoever holds it may run the statements prepared on it.

// Preparer is a *sql.DB (statements prepared on each pooled connection as needed) or a *sql.Conn
// (statements bound to that connection).
type Preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// PrepareByName fills every field of set, a pointer to a struct whose fields are all *sql.Stmt,
// with its statement prepared on p: the field X from texts["sqlX"], the constant of the same
// name in the component's sql.go, so that no field can run another's text. On error the fields
// already prepared stay set, for CloseByName. It is how every SQLite component holds its
// statements, the reader pool's and the writer's (PrepareWrites) alike.
func PrepareByName(ctx context.Context, p Preparer, set any, texts map[string]string) error {
	v := reflect.ValueOf(set).Elem()
	for i := range v.NumField() {
		name := "sql" + v.Type().Field(i).Name
		text, ok := texts[name]
		if !ok {
			return fmt.Errorf("no statement %s", name)
		}
		st, err := p.PrepareContext(ctx, text)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		v.Field(i).Set(reflect.ValueOf(st))
	}
	return nil
}

// CloseByName closes and clears every prepared field of set (see PrepareByName).
func CloseByName(set any) {
	v := reflect.ValueOf(set).Elem()
	for i := range v.NumField() {
		if st, _ := v.Field(i).Interface().(*sql.Stmt); st != nil {
			st.Close()
			v.Field(i).SetZero()
		}
	}
}

// writer is the DB's write connection and the statement sets prepared on it. Every field is
// used under the gate only.
type writer struct {
	conn                    *sql.Conn // nil until opened, and again after it broke
	begin, commit, rollback *sql.Stmt
	sets                    []stmtSet
}

// stmtSet is a component's write statements: set is filled from texts (PrepareByName).
type stmtSet struct {
	set   any
	texts map[string]string
}

// PrepareWrites prepares set (see PrepareByName) on d's writer connection, now and whenever the
// connection is opened anew after it broke. Use its statements only inside d's write
// transactions (Write, Begin); ReleaseWrites forgets them, in the component's Close.
func (d *DB) PrepareWrites(ctx context.Context, set any, texts map[string]string) error {
	if err := d.Lock(ctx); err != nil {
		return err
	}
	defer d.Unlock()
	d.w.sets = append(d.w.sets, stmtSet{set: set, texts: texts})
	var err error
	if d.w.conn == nil {
		err = d.open(ctx) // prepares every set, this one included
	} else {
		err = PrepareByName(ctx, d.w.conn, set, texts)
	}
	if err != nil {
		// Refused: the set is not the writer's, and a later connection does not prepare it.
		d.w.sets = d.w.sets[:len(d.w.sets)-1]
		CloseByName(set)
	}
	return err
}

// ReleaseWrites closes the statements of set and stops preparing them, after the write in
// progress on d.
func (d *DB) ReleaseWrites(set any) {
	_ = d.Lock(context.Background()) // cannot fail without a deadline
	defer d.Unlock()
	for i, s := range d.w.sets {
		if s.set == set {
			d.w.sets = append(d.w.sets[:i], d.w.sets[i+1:]...)
			break
		}
	}
	CloseByName(set)
}

// open takes the writer connection out of W and prepares every set on it. Called under the gate.
func (d *DB) open(ctx context.Context) error {
	c, err := d.W.Conn(ctx)
	if err != nil {
		return err
	}
	d.w.conn = c
	for _, p := range []struct {
		dst  **sql.Stmt
		text string
	}{{&d.w.begin, "BEGIN IMMEDIATE"}, {&d.w.commit, "COMMIT"}, {&d.w.rollback, "ROLLBACK"}} {
		if *p.dst, err = c.PrepareContext(ctx, p.text); err != nil {
			d.discard()
			return err
		}
	}
	for _, s := range d.w.sets {
		if err := PrepareByName(ctx, c, s.set, s.texts); err != nil {
			d.discard()
			return err
		}
	}
	return nil
}

// discard closes the writer connection and every statement on it; the next transaction opens a
// new one. Called under the gate.
func (d *DB) discard() {
	for _, s := range d.w.sets {
		CloseByName(s.set)
	}
	for _, st := range []**sql.Stmt{&d.w.begin, &d.w.commit, &d.w.rollback} {
		if *st != nil {
			(*st).Close()
			*st = nil
		}
	}
	if d.w.conn != nil {
		// Tell database/sql the connection is unusable, so it closes it instead of pooling it.
		_ = d.w.conn.Raw(func(any) error { return driver.ErrBadConn })
		d.w.conn.Close()
		d.w.conn = nil
	}
}

// closeWriter closes the writer's statements and returns its connection to W, for Close.
func (d *DB) closeWriter() {
	_ = d.Lock(context.Background())
	defer d.Unlock()
	for _, s := range d.w.sets {
		CloseByName(s.set)
	}
	d.w.sets = nil
	for _, st := range []*sql.Stmt{d.w.begin, d.w.commit, d.w.rollback} {
		if st != nil {
			st.Close()
		}
	}
	d.w.begin, d.w.commit, d.w.rollback = nil, nil, nil
	if d.w.conn != nil {
		d.w.conn.Close()
		d.w.conn = nil
	}
}

// Tx is one write transaction on d's writer connection, holding d's write gate from Begin until
// Commit or Rollback: the statements every component prepared with PrepareWrites run in it, so a
// store and a transport on one file commit together or not at all. Nothing of it is visible to
// others before Commit. It is not safe for concurrent use.
type Tx struct {
	d     *DB
	after []func()
	ended bool
}

// DB returns the database of t, so that a component can refuse a transaction of another file.
func (t *Tx) DB() *DB { return t.d }

// AfterCommit calls fn once t has committed (not after a rollback): what may be told only of
// what is durable, such as waking this process's waiters for messages t published.
func (t *Tx) AfterCommit(fn func()) { t.after = append(t.after, fn) }

// Begin takes d's write gate (in request order, honouring ctx) and begins a BEGIN IMMEDIATE
// transaction, retrying while another process holds the file's write lock, for at most
// BusyTimeout. The caller must end it with Commit or Rollback, and must not hold it across
// anything slow: every write of the process waits for it.
//
// A statement that fails inside the transaction leaves it for Rollback only. Prefer Write,
// which also retries a whole transaction that met a lock mid-way (in rollback-journal mode, the
// in-memory database's, a write may find readers in the way); with Begin only the BEGIN and the
// COMMIT are retried.
func (d *DB) Begin(ctx context.Context) (*Tx, error) {
	if err := d.Lock(ctx); err != nil {
		return nil, err
	}
	if err := Retry(ctx, d.BusyTimeout, func() error { return d.begin(ctx) }); err != nil {
		d.Unlock()
		return nil, err
	}
	return &Tx{d: d}, nil
}

// begin opens the writer connection if need be and sends BEGIN IMMEDIATE. Called under the gate.
func (d *DB) begin(ctx context.Context) error {
	if d.w.conn == nil {
		if err := d.open(ctx); err != nil {
			return err
		}
	}
	// No ctx on BEGIN, COMMIT and ROLLBACK: the connection never waits for a lock inside SQLite
	// (busy_timeout 0), and binding ctx would cost the driver a watcher goroutine per statement.
	if _, err := d.w.begin.ExecContext(context.Background()); err != nil {
		d.abort()
		return err
	}
	return nil
}

// abort rolls back whatever transaction the writer connection may be in. A ROLLBACK that fails
// for any reason but "no transaction" leaves the connection in an unknown state: it is
// discarded. Called under the gate.
func (d *DB) abort() {
	if d.w.conn == nil {
		return
	}
	if _, err := d.w.rollback.ExecContext(context.Background()); err != nil &&
		!strings.Contains(err.Error(), "no transaction is active") {
		d.discard()
	}
}

// Commit commits t and releases the gate. ctx is looked at first: once it is done, t is rolled
// back instead and Commit returns ctx's error, with nothing written. A COMMIT that finds the file
// busy (readers in the way in rollback-journal mode) is retried within BusyTimeout; one that
// fails for good rolls back. After a Commit, or on any error of it, t is ended.
func (t *Tx) Commit(ctx context.Context) error {
	if t.ended {
		return errors.New("sqlitedb: commit of an ended transaction")
	}
	t.ended = true
	d := t.d
	defer d.Unlock()
	if err := ctx.Err(); err != nil { // the last moment to give up with nothing written
		d.abort()
		return err
	}
	err := Retry(ctx, d.BusyTimeout, func() error {
		_, err := d.w.commit.ExecContext(context.Background())
		return err
	})
	if err != nil {
		d.abort()
		return err
	}
	for _, fn := range t.after {
		fn()
	}
	return nil
}

// Rollback ends t without committing it and releases the gate; after Commit it does nothing.
func (t *Tx) Rollback() {
	if t.ended {
		return
	}
	t.ended = true
	t.d.abort()
	t.d.Unlock()
}

// Write runs fn in one write transaction (Begin, fn, Commit) and commits it; fn does not end
// the transaction itself. fn must have no effect outside the transaction but through
// AfterCommit: a transaction that met a lock held by
// another connection (IsBusy) is rolled back and run again, within BusyTimeout. An error of fn
// rolls the transaction back and is returned as it is; so is a busy error that outlasted the
// budget (wrapping errs.Unavailable) and ctx's error once ctx is done, with nothing written.
func (d *DB) Write(ctx context.Context, fn func(*Tx) error) error {
	if err := d.Lock(ctx); err != nil {
		return err
	}
	var t *Tx
	err := Retry(ctx, d.BusyTimeout, func() error {
		if err := d.begin(ctx); err != nil {
			return err
		}
		t = &Tx{d: d, ended: true} // Write ends it: Commit and Rollback from fn do nothing
		if err := fn(t); err != nil {
			d.abort()
			return err
		}
		if err := ctx.Err(); err != nil {
			d.abort()
			return err
		}
		if _, err := d.w.commit.ExecContext(context.Background()); err != nil {
			d.abort()
			return err
		}
		return nil
	})
	d.Unlock()
	if err != nil {
		return err
	}
	for _, fn := range t.after {
		fn()
	}
	return nil
}
