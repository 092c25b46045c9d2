package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/errs"
	"github.com/steadhq/stead/sqlitedb"
)

// DefaultTraceCap is how many trace steps per execution a store keeps unless WithTraceCap says
// otherwise.
const DefaultTraceCap = 200

// Option configures New.
type Option func(*backend)

// WithTraceCap keeps at most n trace steps per execution: appending step n+1 evicts the oldest.
// Indexes are unaffected by eviction. n <= 0 disables the cap.
func WithTraceCap(n int) Option { return func(b *backend) { b.traceCap = max(n, 0) } }

// backend is the SQLite stead.Backend: storage code only, behind the checks of stead.Store.
type backend struct {
	db       *sqlitedb.DB
	traceCap int
	closed   atomic.Bool

	w    writeStmts    // prepared on the database's writer connection, used in its write transactions
	r    readStmts     // prepared on the reader pool
	rsem chan struct{} // one slot per reader connection

	listMu sync.Mutex
	lists  map[listShape]*sql.Stmt // listing statements by shape
}

var (
	_ stead.Backend          = (*backend)(nil)
	_ stead.Counter          = (*backend)(nil)
	_ stead.AttributeBackend = (*backend)(nil)
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationsTable records which schema migrations a database has applied.
const migrationsTable = "stead_migrations"

// migrations returns the embedded schema steps in version order.
func migrations() fs.FS {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		panic(err) // the directory is embedded: it is always there
	}
	return sub
}

// New returns the execution store on db, creating or migrating its tables first. Every process
// that opens the file migrates it to the schema of its build; a file whose schema is newer than
// the build is refused.
//
// db is the application's: the store's writes queue on its write gate with those of every other
// component on db, and closing the store leaves db open.
func New(ctx context.Context, db *sqlitedb.DB, opts ...Option) (*stead.Store, error) {
	if db == nil {
		return nil, fmt.Errorf("sqlitestore: %w: nil database", stead.ErrInvalid)
	}
	b := &backend{db: db, traceCap: DefaultTraceCap, lists: make(map[listShape]*sql.Stmt)}
	for _, o := range opts {
		o(b)
	}
	if err := sqlitedb.Migrate(ctx, db, migrationsTable, migrations()); err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	b.rsem = make(chan struct{}, db.Readers)
	if err := b.open(ctx); err != nil {
		b.Close()
		return nil, fmt.Errorf("sqlitestore: prepare: %w", sqlitedb.Classify(err))
	}
	return stead.NewStore(b), nil
}

// open prepares the write statements on the database's writer connection and the read
// statements on its reader pool, so that New reports their errors.
func (b *backend) open(ctx context.Context) error {
	if err := b.db.PrepareWrites(ctx, &b.w, statements); err != nil {
		return err
	}
	return sqlitedb.PrepareByName(ctx, b.db.R, &b.r, statements)
}

// Close releases the store's statements, after the write in progress on the database (the
// store's or another component's). It leaves the database open.
func (b *backend) Close() error {
	b.closed.Store(true)
	b.listMu.Lock()
	for _, st := range b.lists {
		st.Close()
	}
	b.lists = nil
	b.listMu.Unlock()
	b.db.ReleaseWrites(&b.w) // after the write in progress, which holds the gate
	sqlitedb.CloseByName(&b.r)
	return nil
}

// read runs fn on the read statements, retrying it while another process holds a lock it needs.
// Point reads, which take microseconds, pass bg to their statement and so spare the driver a
// watcher goroutine per statement, about a third of their CPU time; reads that can be long
// (listing, batches, scans) pass ctx. fn runs holding a slot of rsem, one per connection of the
// reader pool, taken honouring ctx, so that the store's own reads never queue inside
// database/sql, where bg could not end the wait. The pool is the DB's: when other components on
// it hold reader connections as well, a point read may still wait there for one, as briefly as
// their reads last.
func (b *backend) read(ctx context.Context, fn func(*readStmts) error) error {
	err := sqlitedb.Retry(ctx, b.db.BusyTimeout, func() error {
		select {
		case b.rsem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		defer func() { <-b.rsem }()
		return fn(&b.r)
	})
	if err == nil || errs.Classified(err) {
		return err
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		err = fmt.Errorf("%w (%w)", ctxErr, err) // see write
	}
	return b.classify(err)
}

// write runs fn in one write transaction of the database (sqlitedb.DB.Write) and commits it. fn
// must have no effect outside the transaction: a transaction that found the database locked by
// another process is rolled back and run again, within the busy timeout. The transaction runs
// under the database's write gate, so the writes of every component of this process on db queue
// instead of meeting in SQLite's busy handler.
//
// Errors: what fn returns (conflicts, invalid input) comes back as it is. Every other error
// means nothing was written: a lock held elsewhere past the busy timeout, or a deadline that
// passed while waiting for the gate or the lock, wraps ErrUnavailable; a cancelled ctx is in
// the chain of what is returned.
func (b *backend) write(ctx context.Context, fn func(*writeStmts) error) error {
	err := b.db.Write(ctx, func(*sqlitedb.Tx) error {
		// Checked under the gate: Close releases the statements under it.
		if b.closed.Load() {
			return fmt.Errorf("sqlitestore: %w", stead.ErrClosed)
		}
		return fn(&b.w)
	})
	return b.written(ctx, err)
}

// written maps the error of a write transaction (see write).
func (b *backend) written(ctx context.Context, err error) error {
	if err == nil || errs.Classified(err) {
		return err
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		// The write stopped because ctx ended, whatever error the driver saw first; COMMIT is
		// never interrupted, so nothing was written.
		if !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w (%w)", ctxErr, err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("sqlitestore: %w: nothing written: %w", stead.ErrUnavailable, err)
		}
		return fmt.Errorf("sqlitestore: nothing written: %w", err)
	}
	return b.classify(err)
}

func (b *backend) classify(err error) error {
	if err == nil {
		return nil
	}
	if errs.Classified(err) {
		return err
	}
	if b.closed.Load() { // a call that raced Close found its statements closed
		return fmt.Errorf("sqlitestore: %w: %w", stead.ErrClosed, err)
	}
	return fmt.Errorf("sqlitestore: %w", sqlitedb.Classify(err))
}

func notFound(id string) error {
	return fmt.Errorf("sqlitestore: execution %q: %w", id, stead.ErrNotFound)
}

// micros is a time as stored: unix microseconds, NULL when unset. The Store hands every time
// over at microsecond precision, so nothing is lost.
func micros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

// bg is the context of statements inside a write transaction and of point reads: the writer
// connection does not wait for locks (busy_timeout 0), Retry does, and binding ctx would cost the
// driver a watcher goroutine per statement. See backend.read.
var bg = context.Background()

func fromMicros(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.UnixMicro(n.Int64).UTC()
}
