// Package sqliteturn is the SQLite backend of the turn store contract (package turn), on
// modernc.org/sqlite (pure Go, no cgo): durable on one host with nothing to install.
//
// New puts the backend on a database the application opens once per file and hands to every
// component that keeps its tables there, and returns checked turn.Stores like every backend
// constructor: the rules that need no stored state are kept once by turn.NewStores, and the
// Backend runs storage code only.
//
//	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: "stead.db"})
//	...
//	defer db.Close() // the application's: the turn store never closes it
//	stores, err := sqliteturn.New(ctx, db) // migrates first
//	...
//	receipt, err := stores.Commits.Commit(ctx, "acme", bundle)
//
// New creates or migrates the tables (turn_conversations, turn_events, turn_outbox …, the same
// names as pgturn's; versions in turn_migrations) under the DB's write gate; a file whose schema
// is newer than the build is refused.
//
// # Writes
//
// Every write method, and every bundle, is one transaction of the DB (sqlitedb.DB.Write) on its
// writer connection: it begins with BEGIN IMMEDIATE and runs under the DB's write gate, so the
// writes of this store and of every other component on the DB queue in request order instead of
// meeting in SQLite's busy handler.
// BEGIN IMMEDIATE takes the file's write lock first: no writer of any process moves a row between
// two statements of the transaction, so each rule of the contract is a statement carrying the
// state it expects in its WHERE clause plus, when that matches nothing, a read in the same
// transaction to tell ErrNotFound from ErrConflict from an accepted repeat. What that gives:
//
//   - exactly one Fresh admission per (account, idempotency key), across processes;
//   - an outbox row is never claimed twice: the claim selects and moves the due rows in one
//     statement, and the next claimer, of any process, runs after it;
//   - an account's events become visible in sequence order (one writer at a time), so a ReadFrom
//     cursor never passes over an event that commits late;
//   - at most one open blocking card per case, kept by a partial unique index of the file, which
//     a write going around this package meets too.
//
// Several processes may open the same file (WAL). A writer that finds the write lock held by
// another process waits up to sqlitedb.Config.BusyTimeout (sqlitedb.Retry); after that the call
// fails with ErrUnavailable and nothing is written.
//
// # Errors
//
// Errors wrap the turn sentinels, as pgturn's do, with one difference the medium allows: a
// SQLite write never ends indeterminate. SQLite commits in this process, and a COMMIT that fails
// rolls the transaction back, so there is no "COMMIT sent, no answer" case. ctx is honoured while
// a write waits for the gate and for a lock held by another process, and between its statements;
// COMMIT itself is never interrupted. So every failed write is definite:
//
//   - ErrUnavailable, nothing written: the file stayed locked past the busy timeout, cannot be
//     opened, read or written, or ctx ended before COMMIT (the context's error is in the chain);
//   - ErrConflict and friends: a rule refused the write, nothing written.
//
// ErrTimeout never comes from a write; only a read cut short by the caller's deadline reports it,
// and a read writes nothing.
//
// # Reads
//
// Reads run on the DB's reader pool, beside the writer, as WAL allows: each statement sees every
// commit that finished before it began.
//
// # Durability
//
// sqlitedb.Config.Synchronous chooses it for every component on the DB: with SyncNormal (the
// default) a commit that returned survives a crash of the process, and the last commits before a
// power loss may be lost (the file stays consistent); with SyncFull every commit survives power
// loss, at one fsync per transaction.
//
// # SQL
//
// Every statement is a constant of sql.go named after the method that sends it (sqlClaimDue,
// sqlRedactPayload …), prepared once by name into the field of the same name (ClaimDue): on the
// DB's writer connection for the writes (sqlitedb.DB.PrepareWrites), on its reader pool for the
// reads. A test pairs each constant with its field and its method and prepares it against a
// migrated file.
package sqliteturn
