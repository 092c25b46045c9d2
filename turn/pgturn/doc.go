// Package pgturn is the PostgreSQL backend of the turn store contract (package turn), on pgx v5.
//
// New puts the backend on a pool the application owns and returns checked turn.Stores, like
// every backend constructor: the rules that need no stored state are kept once by
// turn.NewStores, and the Backend runs storage code only.
//
//	pool, err := pgdb.Open(ctx, url, pgdb.Config{MaxConns: 16, StatementTimeout: 5 * time.Second})
//	...
//	defer pool.Close() // the application's: the turn store never closes it
//	stores, err := pgturn.New(ctx, pool, pgturn.WithSchema("turns")) // migrates unless WithoutMigrate
//	...
//	receipt, err := stores.Commits.Commit(ctx, "acme", bundle)
//
// The pool settings (size, statement timeout, PgBouncer mode, connect retry) are pgdb.Config's.
// Set a statement timeout: without one a single lock wait can hold a pooled connection until the
// pool is empty and every turn fails. It cancels a statement, not a transaction: a cancelled
// statement inside a commit abandons the whole bundle and is reported as ErrTimeout, which the
// contract reads as "re-read and resume by idempotency key", so size it for the largest bundle a
// turn produces. The outbox claim never waits on another dispatcher (SKIP LOCKED), so it is never
// the one to tune.
//
// One Backend plays every role, and several processes may share one database; the contract's
// rules live in the schema and in the statements that write:
//
//   - account_id leads every key and index (but the outbox's, a system queue addressed by id), so
//     another tenant's id is a different row and answers ErrNotFound exactly like an unknown one;
//   - a partial unique index keeps at most one open blocking card per case, so two concurrent
//     inserts cannot both win;
//   - every status change carries the state it expects in the WHERE clause of the UPDATE; zero rows
//     means the precondition failed, and the row as it stood, returned by the same statement,
//     tells ErrNotFound from ErrConflict from an accepted repeat;
//   - journal admission is INSERT ... ON CONFLICT DO NOTHING on the idempotency key, returning the
//     stored entry when the key is taken, so there is exactly one fresh admission per key however
//     many callers race;
//   - event sequences come from an identity column, in batch order, and an account's appends take
//     a transaction-scoped advisory lock of the account first, so its events become visible in
//     sequence order and a ReadFrom cursor never passes over one that commits late;
//   - the outbox is claimed with FOR UPDATE SKIP LOCKED, so two dispatchers never get one row;
//   - every write, and every bundle, is one transaction committed last, and costs two round trips
//     whatever it carries: BEGIN and every statement travel in one pgx batch, each answer is
//     checked by its rule, and COMMIT follows only if all of them accepted.
//
// Backend.CommitIn applies a bundle inside the application's own transaction (under a
// savepoint), so that the application's tables and the turn store change together or not at all.
// It is reached through the Stores' escape hatch, stores.Backend().(*pgturn.Backend), and checks
// the bundle with turn.PrepareCommit exactly as Commit does.
//
// Every time the backend stamps, the redaction record included, comes from WithClock (default
// time.Now), in UTC at microsecond precision, never from the database's now(): a value a write
// returns is the value read back, and a test on a stopped clock sees the times it set.
//
// Errors wrap the turn sentinels. A lost connection before COMMIT is ErrUnavailable (the server
// rolled the transaction back); a COMMIT that got no answer is ErrTimeout (it may have landed:
// re-read, do not retry blindly); statement_timeout firing is ErrTimeout too.
//
// The schema is one migration, migrations/001_init.sql, recorded in turn_migrations; later
// changes will be new files. New applies what is missing under an advisory lock, so it is safe on
// every start-up and from many processes at once. The
// tables may live in their own schema (WithSchema); statements name it explicitly and rely on no
// session state, so the backend works behind PgBouncer in transaction mode
// (pgdb.Config.PgBouncer).
package pgturn
