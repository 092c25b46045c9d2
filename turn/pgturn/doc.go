// Package pgturn is the PostgreSQL backend of the turn store contract (package turn), on pgx v5.
//
// One Store plays every role: conversations and turns, interactions, the command journal, the
// event journal, the outbox, replay records and the bundle commit. Several processes may share
// one database; the contract's rules live in the schema and in the statements that write:
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
// CommitIn applies a bundle inside the application's own transaction (under a savepoint), so that
// the application's tables and the turn store change together or not at all.
//
// Times the store stamps come from WithClock (default time.Now), in UTC at microsecond
// precision, including the redaction record (the original used the database's now()).
//
// Errors wrap the turn sentinels. A lost connection before COMMIT is ErrUnavailable (the server
// rolled the transaction back); a COMMIT that got no answer is ErrTimeout (it may have landed:
// re-read, do not retry blindly); statement_timeout firing is ErrTimeout too.
//
// Migrate applies the embedded schema (two versions: the tables, then the redaction columns) and
// is safe to call on every start-up from many processes at once. The tables may live in their
// own schema (Config.Schema); statements name it explicitly and rely on no session state, so the
// store works behind PgBouncer in transaction mode (Config.PgBouncer).
package pgturn
