package sqliteturn

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/dbconflict"
)

// Backend is the SQLite backend of every turn role. It is safe for concurrent use, and several
// processes may open the same file: every rule the contract states is kept by a constraint of the
// file or by a write transaction that holds the file's write lock, never by a lock of this
// process alone. It assumes the checked front of turn.NewStores before it: New returns that
// front, and Stores.Backend reaches this type.
type Backend struct {
	db    *sqlitedb.DB
	clock func() time.Time
	// Statements prepared once per connection and reused: parsing costs more than running most
	// of them.
	writes, reads *statements

	// inTx, when set (by tests only), runs inside every write transaction once its statements
	// ran, before it commits or rolls back: what another connection sees then is what it would
	// see at any moment of the transaction.
	inTx func()
}

var _ turn.Backend = (*Backend)(nil)

// Option configures New.
type Option func(*config)

type config struct {
	clock func() time.Time
}

// WithClock makes the backend stamp the times it owns (phase updates, resolutions, completions,
// invalidations, redactions, receipts) from now instead of time.Now. Stamps are taken in UTC and
// truncated to microseconds, the precision the file stores, so they read back equal.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.clock = now
		}
	}
}

// The schema lives in migrations/ and is compiled into the binary.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// MigrationsTable records the applied versions of this component, beside its tables.
const MigrationsTable = "turn_migrations"

func migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded: it is always there
	}
	return sub
}

// New returns the checked Stores of a SQLite backend on db, which the application owns: closing
// the Stores never closes it, and other components (sqlitestore, sqlitetransport) may keep their
// tables in the same file. New first applies the migrations the file lacks, under db's write
// gate and in one write transaction, so it is safe on every start-up and from several processes
// at once; a file whose schema is newer than this build is refused.
//
// A nil db is ErrInvalid; a file that cannot be written or stays locked past the busy timeout is
// ErrUnavailable.
func New(ctx context.Context, db *sqlitedb.DB, opts ...Option) (turn.Stores, error) {
	if db == nil {
		return turn.Stores{}, fmt.Errorf("%w: sqliteturn: nil database", turn.ErrInvalid)
	}
	c := config{clock: time.Now}
	for _, o := range opts {
		o(&c)
	}
	if err := sqlitedb.Migrate(ctx, db, MigrationsTable, migrations()); err != nil {
		return turn.Stores{}, fmt.Errorf("sqliteturn: %w", err)
	}
	b := &Backend{db: db, clock: c.clock}
	var err error
	if b.writes, err = prepareStatements(ctx, db.W); err != nil {
		return turn.Stores{}, fmt.Errorf("sqliteturn: prepare: %w", classify(err))
	}
	if b.reads, err = prepareStatements(ctx, db.R); err != nil {
		b.writes.close()
		return turn.Stores{}, fmt.Errorf("sqliteturn: prepare: %w", classify(err))
	}
	return turn.NewStores(b), nil
}

// Close releases the prepared statements (the checked front calls it once, from Stores.Close).
// It leaves the database open: it is the application's.
func (s *Backend) Close() error {
	s.writes.close()
	s.reads.close()
	return nil
}

// now is the instant the backend stamps: UTC at microsecond precision (turn.ClockTime).
func (s *Backend) now() time.Time { return turn.ClockTime(s.clock()) }

// querier is what the statements need: a write transaction (inTx), or the reader pool
// (statements on DB.R). Both run each query as a statement prepared once per connection.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// statements holds every statement prepared on a pool; database/sql prepares each again on
// every other connection of the pool the first time it runs there, and reuses it after.
type statements struct {
	pool *sql.DB
	mu   sync.Mutex
	m    map[string]*sql.Stmt
}

// prepareStatements prepares every statement of statementTexts on pool.
func prepareStatements(ctx context.Context, pool *sql.DB) (*statements, error) {
	p := &statements{pool: pool, m: make(map[string]*sql.Stmt, len(statementTexts))}
	for _, q := range statementTexts {
		st, err := pool.PrepareContext(ctx, q)
		if err != nil {
			p.close()
			return nil, err
		}
		p.m[q] = st
	}
	return p, nil
}

// get returns the prepared statement of query; false when it has none (the set is closed, or
// the query is not one of statementTexts), and the caller runs the query unprepared.
func (p *statements) get(query string) (*sql.Stmt, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.m[query]
	return st, ok
}

func (p *statements) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, st := range p.m {
		st.Close()
	}
	p.m = nil
}

func (p *statements) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st, ok := p.get(query); ok {
		return st.ExecContext(ctx, args...)
	}
	return p.pool.ExecContext(ctx, query, args...)
}

func (p *statements) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st, ok := p.get(query); ok {
		return st.QueryContext(ctx, args...)
	}
	return p.pool.QueryContext(ctx, query, args...)
}

func (p *statements) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := p.get(query); ok {
		return st.QueryRowContext(ctx, args...)
	}
	return p.pool.QueryRowContext(ctx, query, args...)
}

// inTx runs the prepared statements of st inside tx, on tx's connection.
type inTx struct {
	tx *sql.Tx
	st *statements
}

// The statement, bound to tx: database/sql reuses the statement prepared on tx's connection, or
// prepares it there (on that connection only) the first time.
func (q inTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st, ok := q.st.get(query); ok {
		return q.tx.StmtContext(bg, st).ExecContext(ctx, args...)
	}
	return q.tx.ExecContext(ctx, query, args...)
}

func (q inTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st, ok := q.st.get(query); ok {
		return q.tx.StmtContext(bg, st).QueryContext(ctx, args...)
	}
	return q.tx.QueryContext(ctx, query, args...)
}

func (q inTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := q.st.get(query); ok {
		return q.tx.StmtContext(bg, st).QueryRowContext(ctx, args...)
	}
	return q.tx.QueryRowContext(ctx, query, args...)
}

// bg is the context of the statements inside a write transaction. The writer connection never
// waits inside SQLite (busy timeout 0: Retry waits, honouring ctx), so a statement there takes
// microseconds, and a cancellable context would cost the driver a watcher goroutine for each.
// ctx is checked between the statements instead, and before COMMIT.
var bg = context.Background()

// write runs fn in one write transaction on db's writer pool and commits it, holding db's write
// gate throughout, so the writes of every component of this process on db queue in request order
// instead of meeting in SQLite's busy handler. The transaction begins with BEGIN IMMEDIATE (the
// DB's writer pool is opened so): it takes the file's write lock first, so a writer never has to
// upgrade a read lock, and no other writer of any process moves a row while fn runs. A
// transaction that finds the file locked by another process is rolled back and run again, within
// the busy timeout; fn must therefore have no effect outside the transaction.
//
// Errors: what fn returns (a refusal of a rule, corrupt data) comes back classified. Every other
// failure wrote nothing, and says so: the gate or the lock not had before ctx ended, the lock held
// elsewhere past the busy timeout, ctx ending between two statements (checked last just before
// COMMIT, which is never interrupted) are ErrUnavailable, the context's error in the chain. A
// failing COMMIT rolls back in SQLite, so it too is definite. A write is never ErrTimeout.
func (s *Backend) write(ctx context.Context, fn func(q querier) error) error {
	if err := s.db.Lock(ctx); err != nil {
		return fmt.Errorf("sqliteturn: nothing written: %w", err)
	}
	defer s.db.Unlock()
	err := sqlitedb.Retry(ctx, s.db.BusyTimeout, func() error {
		conn, err := s.db.W.Conn(bg)
		if err != nil {
			return err
		}
		defer conn.Close()
		tx, err := conn.BeginTx(bg, nil)
		if err != nil {
			return err
		}
		err = fn(inTx{tx: tx, st: s.writes})
		if s.inTx != nil {
			s.inTx()
		}
		if err != nil {
			_ = tx.Rollback()
			return err
		}
		if err := ctx.Err(); err != nil { // the last moment to give up with nothing written
			_ = tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			// A COMMIT SQLite refuses with SQLITE_BUSY (readers of an in-memory database, which
			// has no WAL, still hold it) leaves the transaction open on the connection, though
			// database/sql counts it done: end it before the connection goes back to the pool.
			_, _ = conn.ExecContext(bg, sqlCommitRollback)
			return err
		}
		return nil
	})
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !classified(err) {
		return fmt.Errorf("%w: sqliteturn: nothing written: %w", turn.ErrUnavailable, ctxErr)
	}
	return classify(err)
}

// read runs fn on the DB's reader pool, beside the writer (WAL): each statement sees every
// commit that finished before it began. It is retried while another process holds a lock the
// read needs (rare in WAL mode: a recovery, a checkpoint restart).
func (s *Backend) read(ctx context.Context, fn func(q querier) error) error {
	err := sqlitedb.Retry(ctx, s.db.BusyTimeout, func() error { return fn(s.reads) })
	return classify(err)
}

func readOne[T any](ctx context.Context, s *Backend, fn func(q querier) (T, error)) (T, error) {
	var out T
	err := s.read(ctx, func(q querier) error {
		var err error
		out, err = fn(q)
		return err
	})
	return out, err
}

// writeOne runs fn as a write of its own and returns what it produced.
func writeOne[T any](ctx context.Context, s *Backend, fn func(q querier) (T, error)) (T, error) {
	var out T
	err := s.write(ctx, func(q querier) error {
		var err error
		out, err = fn(q)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// Stable codes of failures the contract has no sentinel for. They are carried by a *turn.Error
// (check with turn.HasCode), the driver's error beside it in the chain.
const (
	// CodeSQLitePrefix followed by SQLite's primary result code in decimal: a database error of
	// no other kind.
	CodeSQLitePrefix = "stead.turn.sqlite."
	// CodeSQLiteDriver: a driver failure of no other kind.
	CodeSQLiteDriver = "stead.turn.sqlite.driver"
)

// SQLite's extended constraint codes this package tells apart (sqlite3.h).
const (
	constraintUnique     = 2067 // SQLITE_CONSTRAINT_UNIQUE
	constraintPrimaryKey = 1555 // SQLITE_CONSTRAINT_PRIMARYKEY
	constraintCheck      = 275  // SQLITE_CONSTRAINT_CHECK
	constraintForeignKey = 787  // SQLITE_CONSTRAINT_FOREIGNKEY
	constraintNotNull    = 1299 // SQLITE_CONSTRAINT_NOTNULL
	constraintDatatype   = 3091 // SQLITE_CONSTRAINT_DATATYPE (a STRICT column refused a value)
)

// classify maps an error of a statement to the contract's sentinels, keeping the driver's error
// in the chain for errors.As, as pgturn does for PostgreSQL:
//
//   - unique and primary-key violations, and foreign-key violations (the parent row vanished):
//     ErrConflict, worded by the rule that refused the write (which record already exists),
//     never with SQLite's own message, which stays in the chain;
//   - CHECK, NOT NULL and STRICT type refusals: turn.CodeInvalidRecord;
//   - a lock held elsewhere past the busy timeout, a file that cannot be opened, read or written:
//     ErrUnavailable (sqlitedb.Classify); nothing was written;
//   - a read cut short by the caller's deadline: ErrTimeout (sqlitedb.Classify), harmless for a
//     read: nothing was written;
//   - any other SQLite error: CodeSQLitePrefix + its primary code; anything else:
//     CodeSQLiteDriver.
func classify(err error) error {
	if err == nil || classified(err) {
		return err
	}
	switch sqlitedb.ExtendedCode(err) {
	case constraintForeignKey:
		return dbconflict.Vanished(err)
	case constraintUnique, constraintPrimaryKey:
		// "UNIQUE constraint failed: turn_events.account_id, turn_events.event_id": the table
		// and the columns tell the rule, which the caller gets in the contract's words.
		_, cols, _ := strings.Cut(err.Error(), "constraint failed: ")
		table, _, _ := strings.Cut(cols, ".")
		return dbconflict.Unique(table, cols, err)
	case constraintCheck, constraintNotNull, constraintDatatype:
		return fmt.Errorf("%w: %w", turn.InvalidRecord("the schema refused a value"), err)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %w", turn.ErrNotFound, err)
	}
	if errors.Is(err, context.Canceled) {
		return err // the caller gave up; it needs no sentinel to know
	}
	if c := sqlitedb.Classify(err); c != err {
		return c
	}
	if code := sqlitedb.Code(err); code != 0 {
		return fmt.Errorf("%w: %w", turn.NewError(fmt.Sprintf("%s%d", CodeSQLitePrefix, code), nil, ""), err)
	}
	return fmt.Errorf("%w: %w", turn.NewError(CodeSQLiteDriver, nil, ""), err)
}

// classified reports whether err already carries the contract's answer (a sentinel or a code), so
// that classifying twice changes nothing.
func classified(err error) bool {
	var coded *turn.Error
	if errors.As(err, &coded) {
		return true
	}
	for _, s := range []error{turn.ErrNotFound, turn.ErrConflict, turn.ErrUnavailable, turn.ErrTimeout,
		turn.ErrInvalid, turn.ErrClosed, turn.ErrCorrupt} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
