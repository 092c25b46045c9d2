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
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/sqlitedb"
)

// DefaultTraceCap is how many trace steps per execution a store keeps unless WithTraceCap says
// otherwise.
const DefaultTraceCap = 200

// Synchronous is the durability level of commits; see the package documentation.
type Synchronous = sqlitedb.Synchronous

// The durability levels.
const (
	// SyncNormal (the default): a commit survives a crash of the process; the last commits before
	// a power loss may be lost.
	SyncNormal = sqlitedb.SyncNormal
	// SyncFull: every commit survives power loss; one fsync per transaction.
	SyncFull = sqlitedb.SyncFull
)

// Option configures Open.
type Option func(*config)

type config struct {
	db       sqlitedb.Config
	traceCap int
}

// WithSynchronous sets the durability level (default SyncNormal).
func WithSynchronous(s Synchronous) Option { return func(c *config) { c.db.Synchronous = s } }

// WithBusyTimeout sets how long a write waits for the write lock held by another process before
// it fails with stead.ErrUnavailable (default 5 s).
func WithBusyTimeout(d time.Duration) Option { return func(c *config) { c.db.BusyTimeout = d } }

// WithTraceCap keeps at most n trace steps per execution: appending step n+1 evicts the oldest.
// Indexes are unaffected by eviction. n <= 0 disables the cap.
func WithTraceCap(n int) Option { return func(c *config) { c.traceCap = max(n, 0) } }

// WithReaders bounds the pool of read-only connections (default GOMAXPROCS, at least 2).
func WithReaders(n int) Option { return func(c *config) { c.db.Readers = n } }

// Store is a stead.Store on one SQLite database. It is safe for concurrent use.
type Store struct {
	db       *sqlitedb.DB
	traceCap int
	closed   atomic.Bool

	wr   *writer
	r    readStmts     // on the reader pool; unused for an in-memory database
	rsem chan struct{} // one slot per reader connection

	listMu sync.Mutex
	lists  map[string]*sql.Stmt // listing statements by shape
}

var _ stead.Store = (*Store)(nil)

//go:embed migrations/*.sql
var migrationFS embed.FS

// MigrationsTable records which schema migrations a database has applied.
const MigrationsTable = "sqlitestore_migrations"

// migrations returns the embedded schema steps in version order.
func migrations() fs.FS {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		panic(err) // the directory is embedded: it is always there
	}
	return sub
}

// Open opens the SQLite database at path, creating the file and the schema if needed, and
// returns a Store on it. path ":memory:" opens a private in-memory database (see the package
// documentation). Every process that opens the file migrates it to the schema of its build;
// a file whose schema is newer than the build is refused.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	c := config{db: sqlitedb.Config{Path: path}, traceCap: DefaultTraceCap}
	for _, o := range opts {
		o(&c)
	}
	db, err := sqlitedb.Open(ctx, c.db)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	if err := sqlitedb.Migrate(ctx, db, MigrationsTable, migrations()); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	s := &Store{db: db, traceCap: c.traceCap, lists: make(map[string]*sql.Stmt)}
	s.wr = &writer{sem: make(chan struct{}, 1), db: db.W, memory: db.Memory, closed: &s.closed}
	s.rsem = make(chan struct{}, db.Readers)
	if err := s.wr.acquire(ctx); err != nil { // open the writer now, so that Open reports its errors
		s.Close()
		return nil, fmt.Errorf("sqlitestore: prepare: %w", sqlitedb.Classify(err))
	}
	s.wr.release()
	if !db.Memory {
		if err := s.r.prepare(ctx, db.R); err != nil {
			s.Close()
			return nil, fmt.Errorf("sqlitestore: prepare: %w", sqlitedb.Classify(err))
		}
	}
	return s, nil
}

// Close closes the database. Calls after Close return an error matching stead.ErrClosed; calls in
// flight finish first. Closing twice is a no-op.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.listMu.Lock()
	for _, st := range s.lists {
		st.Close()
	}
	s.lists = nil
	s.listMu.Unlock()
	s.wr.close()
	closeAll(s.r.all())
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("sqlitestore: close: %w", err)
	}
	return nil
}

func closeAll(ss []**sql.Stmt) {
	for _, p := range ss {
		if *p != nil {
			(*p).Close()
		}
	}
}

// enter checks that ctx is live and the store open.
func (s *Store) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlitestore: %w", err)
	}
	if s.closed.Load() {
		return fmt.Errorf("sqlitestore: %w", stead.ErrClosed)
	}
	return nil
}

// read runs fn on the read statements, retrying it while another process holds a lock it needs.
// fn runs holding one of the reader connections (a slot of rsem, taken honouring ctx), so
// database/sql never waits for a connection itself: point reads, which take microseconds, pass
// bg to their statement and so spare the driver a watcher goroutine per statement, about a
// third of their CPU time. Reads that can be long (listing, batches, scans) pass ctx. For an
// in-memory database fn runs on the writer's connection, between writes.
func (s *Store) read(ctx context.Context, fn func(*readStmts) error) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	err := s.retry(ctx, func() error {
		if !s.wr.memory {
			select {
			case s.rsem <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			defer func() { <-s.rsem }()
			return fn(&s.r)
		}
		if err := s.wr.acquire(ctx); err != nil {
			return err
		}
		defer s.wr.release()
		return fn(&s.wr.r)
	})
	if err == nil || isSentinel(err) {
		return err
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		err = fmt.Errorf("%w (%w)", ctxErr, err) // see write
	}
	return s.classify(err)
}

func (s *Store) retry(ctx context.Context, fn func() error) error {
	return sqlitedb.Retry(ctx, s.db.BusyTimeout, fn)
}

func (s *Store) classify(err error) error {
	if err == nil {
		return nil
	}
	if isSentinel(err) {
		return err
	}
	if s.closed.Load() { // a call that raced Close found its statements or pool closed
		return fmt.Errorf("sqlitestore: %w: %w", stead.ErrClosed, err)
	}
	return fmt.Errorf("sqlitestore: %w", sqlitedb.Classify(err))
}

func isSentinel(err error) bool {
	for _, t := range []error{stead.ErrNotFound, stead.ErrConflict, stead.ErrInvalid, stead.ErrUnavailable, stead.ErrTimeout, stead.ErrClosed} {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

func notFound(id string) error {
	return fmt.Errorf("sqlitestore: execution %q: %w", id, stead.ErrNotFound)
}

// micros is a time as stored: unix microseconds, NULL when unset.
func micros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func fromMicros(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.UnixMicro(n.Int64).UTC()
}

// leaseEnd is now+lease in unix microseconds, rounded up so that a positive lease always holds
// past now.
func leaseEnd(now time.Time, lease time.Duration) int64 {
	return now.UnixMicro() + int64((lease+time.Microsecond-1)/time.Microsecond)
}

func checkClaim(lease time.Duration, limit int) (int, error) {
	if lease <= 0 {
		return 0, check.Invalidf("lease %v is not positive", lease)
	}
	return check.Limit("limit", limit, stead.DefaultListLimit, stead.MaxListLimit)
}
