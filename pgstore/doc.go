// Package pgstore is the PostgreSQL execution store of stead: the backend to pick when many
// worker hosts share one database. It satisfies stead.Store on pgx v5 and pgxpool and passes the
// storetest conformance suite against a real server.
//
//	s, err := pgstore.Open(ctx, "postgres://app@db:5432/app", pgstore.WithSchema("stead"))
//
// # What a call costs
//
// Every method sends one statement outside an explicit transaction, which PostgreSQL runs as its
// own implicit transaction: one network round-trip, and every read sees every commit that ended
// before it began.
//
//   - Commit with a state-only bundle calls the stead_commit_state PL/pgSQL function (created by
//     the migrations): the version compare-and-swap, the insert of a new execution and the
//     dedupe marker, returning false instead of raising when the CAS is lost.
//   - Commit with emits, spawns, timers or a trace step calls stead_commit_bundle: the CAS, then
//     only the side-effect statements the bundle needs, all in the function's one round-trip;
//     on a lost CAS it returns NULL and writes nothing.
//   - CommitBatch (up to stead.MaxBatch executions) sends one statement that takes every item and
//     side effect as array parameters: it updates (or, at version 0, inserts) the executions
//     whose version matches and writes the side effects of those winners only, so a loser writes
//     nothing while the others land. A batch of one takes the single-commit path.
//   - A lost compare-and-swap costs one more round-trip, to report the version found.
//   - LoadForEvent and LoadForEvents read the executions and their dedupe markers in one query,
//     through the stead_load_for_event(s) functions.
//
// The functions on this path plan their statements once per connection (a generic plan) and may
// use only index scans and nested loops: each statement is a primary-key lookup whatever the
// tables hold, and a plan chosen from the statistics of a young or never-analysed table (a hash
// over a sequential scan of a table that gains a row per event) would otherwise stay for the
// life of the connection.
//
// # Schema
//
// Tables stead_executions, stead_outbox, stead_processed_events, stead_timers, stead_spawns and
// stead_trace, the functions stead_commit_state, stead_commit_bundle, stead_load_for_event and
// stead_load_for_events, and the version table
// stead_migrations, in
// the schema of WithSchema or else the search_path. The execution is stored whole as JSON text;
// its status, outcome, active path, parent id, version and times are also kept in columns so that
// List never reads the JSON. Migrations are embedded, versioned and serialised by an advisory
// lock; nothing creates or alters objects outside Migrate.
//
// Times are kept at microsecond precision in UTC: Load, List, DueTimers and Timers return them
// so. Pass a stead.Timer read from the store back to DeleteTimer unchanged.
//
// # Defaults
//
//   - connect: 15 attempts, 1 s apart (WithConnectRetry), honouring the context;
//   - pool: pgxpool's defaults (WithMaxConns);
//   - statement timeout: none (WithStatementTimeout); acquire timeout: none (WithAcquireTimeout);
//   - trace cap: DefaultTraceCap steps per execution (WithTraceCap);
//   - Open migrates (WithoutMigrate to run Migrate separately); New does no I/O, so call Migrate
//     or CheckSchema on a store built with it;
//   - prepared statements are cached per connection; WithPgBouncer sends them unnamed instead,
//     for PgBouncer in transaction mode (the store relies on no session state).
//
// # Errors
//
// Errors wrap the stead sentinels: a lost CAS is a *stead.ConflictError (stead.ErrConflict); no
// connection (refused, pool exhausted, acquire timeout) is stead.ErrUnavailable and nothing was
// sent; a statement timeout or a connection lost mid-call is stead.ErrTimeout and the write may
// have landed; bad input is stead.ErrInvalid and never reaches the database; a closed store is
// stead.ErrClosed.
//
// # Shared transactions
//
// CommitBatchTx and LoadForEventsTx run on a caller's pgx.Tx, so a runtime can claim work,
// commit the steps it produced and acknowledge the work in one transaction (see UndoVersions for
// a rollback). QueueCommit puts a commit on a caller's pgx.Batch instead, so that it travels in
// one round trip with other statements of the transaction (pgtransport's QueueAck, for one).
package pgstore
