package sqliteturn

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"
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
	// The statements, prepared once and reused: parsing costs more than running most of them.
	// w is on the DB's writer connection, used only inside its write transactions; r is on the
	// reader pool (see statements).
	w, r statements
	// closed is set by Close, so that a call through the Backend itself (Stores.Backend, which
	// skips the front's checks) after it is ErrClosed instead of a use of a released statement.
	closed atomic.Bool

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
	if err := b.prepare(ctx); err != nil {
		b.Close()
		return turn.Stores{}, fmt.Errorf("sqliteturn: prepare: %w", classify(err))
	}
	return turn.NewStores(b), nil
}

// prepare fills both statement sets, so that New reports their errors: the writes' on the DB's
// writer connection, under its write gate, the reads' on its reader pool.
func (s *Backend) prepare(ctx context.Context) error {
	if err := s.db.PrepareWrites(ctx, &s.w, statementTexts); err != nil {
		return err
	}
	return sqlitedb.PrepareByName(ctx, s.db.R, &s.r, statementTexts)
}

// Close releases the prepared statements (the checked front calls it once, from Stores.Close),
// the writer's after the write in progress on the DB, which holds the write gate. It leaves the
// database open: it is the application's.
func (s *Backend) Close() error {
	s.closed.Store(true)
	s.db.ReleaseWrites(&s.w)
	sqlitedb.CloseByName(&s.r)
	return nil
}

// now is the instant the backend stamps: UTC at microsecond precision (turn.ClockTime).
func (s *Backend) now() time.Time { return turn.ClockTime(s.clock()) }

// bg is the context of the statements inside a write transaction. The writer connection never
// waits inside SQLite (busy timeout 0: Retry waits, honouring ctx), so a statement there takes
// microseconds, and a cancellable context would cost the driver a watcher goroutine for each.
// ctx is checked between the statements instead, and before COMMIT.
var bg = context.Background()

// write runs fn with the writer's statements in one write transaction of db (sqlitedb.DB.Write)
// and commits it, holding db's write gate throughout, so the writes of every component of this
// process on db queue in request order instead of meeting in SQLite's busy handler. The
// transaction begins with BEGIN IMMEDIATE: it takes the file's write lock first, so a writer
// never has to upgrade a read lock, and no other writer of any process moves a row while fn runs.
// A transaction that finds the file locked by another process is rolled back and run again,
// within the busy timeout; fn must therefore have no effect outside the transaction.
//
// Errors: what fn returns (a refusal of a rule, corrupt data) comes back classified. Every other
// failure wrote nothing, and says so: the gate or the lock not had before ctx ended, the lock held
// elsewhere past the busy timeout, ctx ending between two statements (checked last just before
// COMMIT, which is never interrupted) are ErrUnavailable, the context's error in the chain. A
// failing COMMIT rolls back in SQLite, so it too is definite. A write is never ErrTimeout.
func (s *Backend) write(ctx context.Context, fn func(st *statements) error) error {
	err := s.db.Write(ctx, func(*sqlitedb.Tx) error {
		// Checked under the write gate: Close releases the writer's statements under it.
		if s.closed.Load() {
			return fmt.Errorf("sqliteturn: %w", turn.ErrClosed)
		}
		err := fn(&s.w)
		if s.inTx != nil {
			s.inTx()
		}
		return err
	})
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if !classified(err) {
			return fmt.Errorf("%w: sqliteturn: nothing written: %w", turn.ErrUnavailable, ctxErr)
		}
		if errors.Is(err, turn.ErrUnavailable) { // the gate or the lock not had before ctx ended
			return fmt.Errorf("sqliteturn: nothing written: %w", err)
		}
	}
	return classify(err)
}

// read runs fn on the DB's reader pool, beside the writer (WAL): each statement sees every
// commit that finished before it began. It is retried while another process holds a lock the
// read needs (rare in WAL mode: a recovery, a checkpoint restart).
func (s *Backend) read(ctx context.Context, fn func(st *statements) error) error {
	if s.closed.Load() {
		return fmt.Errorf("sqliteturn: %w", turn.ErrClosed)
	}
	err := sqlitedb.Retry(ctx, s.db.BusyTimeout, func() error { return fn(&s.r) })
	return classify(err)
}

func readOne[T any](ctx context.Context, s *Backend, fn func(st *statements) (T, error)) (T, error) {
	var out T
	err := s.read(ctx, func(st *statements) error {
		var err error
		out, err = fn(st)
		return err
	})
	return out, err
}

// writeOne runs fn as a write of its own and returns what it produced.
func writeOne[T any](ctx context.Context, s *Backend, fn func(st *statements) (T, error)) (T, error) {
	var out T
	err := s.write(ctx, func(st *statements) error {
		var err error
		out, err = fn(st)
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
