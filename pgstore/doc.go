// Package pgstore is the PostgreSQL backend of stead's execution store: the one to pick when many
// worker hosts share one database. Open it with pgtransport on the same pool and hand both to
// worker.Config and worker.Client (worker/pgtx puts a batch in one transaction); worker.Client.Wait
// is woken by its finish notifications (WatchFinished). New puts it on the application's pgx pool and returns the
// checked *stead.Store in front of it; it passes the storetest conformance suite against a real
// server.
//
//	pool, err := pgdb.Open(ctx, "postgres://app@db:5432/app", pgdb.Config{MaxConns: 16})
//	...
//	defer pool.Close() // after the store: the pool is the application's
//	store, err := pgstore.New(ctx, pool, pgstore.WithSchema("stead"))
//
// The Store checks and normalises every argument before this package sees it; what is here is
// storage code only.
//
// # What a call costs
//
// Every method sends one statement outside an explicit transaction, which PostgreSQL runs as its
// own implicit transaction: one network round-trip, and every read sees every commit that ended
// before it began. The one exception, a commit with AlsoProcessed, sends two in one batch.
//
//   - Commit with a state-only bundle calls the stead_commit_state function: the version
//     compare-and-swap (or the insert of a new execution) and the dedupe marker.
//   - Commit with emits, spawns, timers or a trace step calls stead_commit_bundle: the CAS, then
//     only the side-effect statements the bundle needs.
//   - A commit whose bundle has AlsoProcessed sends one more statement in the same round trip, a
//     pgx batch that PostgreSQL runs as one implicit transaction (or in the caller's): for the
//     writes this transaction wrote (the row's xmin is its own id) it moves the row on to its
//     version, one per event applied, and inserts those events, so that they land exactly when
//     the commit wins. A commit without AlsoProcessed sends just its function call, as above.
//   - LoadForEvents whose refs repeat an execution (a worker's chain) calls
//     stead_load_for_events_once, which reads and sends the record with its first ref only;
//     other loads call stead_load_for_events.
//   - CommitBatch (up to stead.MaxBatch executions) calls stead_commit_batch, one set-based
//     statement that commits the executions whose versions match and writes the side effects of
//     those winners only: a loser writes nothing while the others land. Executions are sent
//     sorted by id, so that concurrent batches lock them in one order. A batch of one takes the
//     single-commit path.
//   - A lost compare-and-swap writes nothing and costs one more round-trip, to report the
//     version found (stead.ConflictError.Found).
//   - LoadForEvent and LoadForEvents read the executions and their dedupe markers in one query,
//     through the stead_load_for_event and stead_load_for_events functions. LoadForEvents
//     decodes the record of an execution asked for by several refs once, and gives each later
//     ref a deep copy.
//   - List reads only the listing columns, one keyset page on the index that fits the filter, so
//     page 1,000 costs what page 1 does; ClaimOutbox and ClaimSpawns skip rows other claimers
//     hold (FOR UPDATE SKIP LOCKED) and cost the same however long the backlog.
//   - Count (stead.Counter) runs List's filter under GROUP BY definition_id, status, which the
//     (definition_id, status) index stead_executions_counts answers in group order.
//
// The functions plan their statements once per connection (a generic plan) and never scan a
// table sequentially, and all but stead_commit_batch use neither hash nor merge joins: each
// statement is a primary-key lookup whatever the tables hold, and a plan chosen from the
// statistics of a young or never-analysed table would otherwise stay for the life of the
// connection. Limits are written into the statement text rather than passed as parameters, so
// that each limit keeps a plan that knows it. Most commits change no indexed column, and the
// executions table leaves room in its pages, so that updates stay HOT. bench/results/pgstore.md
// has the measurements.
//
// # Schema
//
// Tables stead_executions, stead_outbox, stead_processed_events, stead_timers, stead_spawns and
// stead_trace, the functions above and the version table stead_migrations live in the schema of
// WithSchema, or else the search_path. The execution is stored whole as the JSON record the
// Store encoded; its status, outcome, active path, parent id, version and times are also kept in
// columns so that List never reads the record. The migration (migrations/001_init.sql) is
// embedded and applied by New under an advisory lock, so many processes may start at once; with
// WithoutMigrate, New runs no DDL and refuses a schema at another version. Nothing else creates
// or alters objects.
//
// Every statement the package sends is in sql.go; Statements returns them by name, for tools
// that replay them.
//
// # Defaults
//
//   - trace cap: DefaultTraceCap steps per execution (WithTraceCap);
//   - New migrates (WithoutMigrate to migrate separately);
//   - pool size, statement timeout, connect retry and PgBouncer mode are the pool's: see
//     pgdb.Config. Behind PgBouncer in transaction mode, open the pool with PgBouncer set
//     (statements are then sent unnamed): the store keeps no session state, and each call costs
//     the same round-trips.
//
// # Errors
//
// Errors wrap the stead sentinels. A lost CAS is a *stead.ConflictError (stead.ErrConflict); a
// deadlock or serialization failure PostgreSQL detects is stead.ErrConflict too, and the commit
// it aborted wrote nothing. No connection (refused, or the context ended while waiting for a
// pooled one) is stead.ErrUnavailable and nothing was sent; a statement timeout or a connection
// lost mid-call is stead.ErrTimeout and the write may have landed.
//
// # Shared transactions
//
// The backend, store.Backend().(*pgstore.Backend), runs on the application's transaction too, so
// that worker/pgtx can claim work, load, commit the steps it produced and acknowledge the work in
// one transaction: LoadForEventsTx and CommitBatchTx take a pgx.Tx, LoadForEventsQuery and
// ScanLoaded let it send the load behind its claim in one round trip, and QueueCommitGuarded puts a
// commit and its guard on a pgx.Batch, so that it travels in one round trip with the
// transaction's other statements (pgtransport's QueueAckHeld, for one). They check their arguments as the Store does and never
// change them: the new versions are in the results, so a rollback leaves nothing to undo.
package pgstore
