// Package sqlitestore is the SQLite execution store of stead: durable on one host with nothing to
// install, built on modernc.org/sqlite (pure Go, no cgo). Open it with sqlitetransport on the same
// file and hand both to worker.Config and worker.Client (examples/firstflow in the repository
// does); move to pgstore when workers on several hosts must share the state. New returns a *stead.Store, the checked
// front every backend shares, with this package's stead.Backend behind it; it passes the
// storetest conformance suite on files and in memory.
//
// The store runs on a database the application opens once per file and hands to every component
// that keeps its tables there:
//
//	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: "stead.db"})
//	if err != nil { ... }
//	defer db.Close()
//	store, err := sqlitestore.New(ctx, db)
//	if err != nil { ... }
//	defer store.Close() // leaves db open
//
// New creates or migrates the store's tables (stead_executions, stead_outbox …, versions in
// stead_migrations); a file whose schema is newer than the build is refused.
//
// # Connections
//
// The store writes on the DB's one writer connection, which every component on the file shares
// (sqlitedb.DB.PrepareWrites, Write), and reads on the DB's reader pool, beside the writer, as WAL
// allows: a read sees every commit that finished before it began. Every write method is one
// transaction that begins with BEGIN IMMEDIATE: it takes the file's write lock first, so two
// writers never deadlock upgrading a read lock, and the version compare-and-swap inside it needs
// no lock of the application's. Each write holds the DB's write gate (sqlitedb.DB.Lock) for its
// transaction, so the writes of this store and of every other component on db queue in request
// order instead of meeting in SQLite's busy handler.
//
// CommitBatchTx commits inside a transaction the caller holds (sqlitedb.DB.Begin), so that other
// writes join it: worker/sqlitetx commits a worker's steps, publishes what they emitted
// (sqlitetransport.PublishBatchTx) and acknowledges their messages in one transaction.
//
// ctx is honoured while a write waits for the gate and for a write lock held by another process.
// Once the lock is held, the statements run to the end (ctx is checked between them) and COMMIT is
// never interrupted, so a write either lands whole or writes nothing, and the caller always knows
// which. Not binding each statement to ctx also spares the driver a watcher goroutine per
// statement, which halves the cost of a commit on a busy machine.
//
// Several processes may open the same file. A writer that finds the write lock held by another
// process waits up to sqlitedb.Config.BusyTimeout; after that the call fails with an error
// matching stead.ErrUnavailable and nothing is written. SQLITE_BUSY never escapes raw.
//
// # Errors
//
// Errors wrap the stead sentinels. A lost compare-and-swap is a *stead.ConflictError; bad input
// is stead.ErrInvalid and never reaches SQLite (the Store refuses it). Any other failed write has
// written nothing: a lock held elsewhere past the busy timeout, or a deadline or cancellation
// while waiting for the gate or the lock, wraps stead.ErrUnavailable with the context's error in
// the chain; a context that ends between the statements of a transaction is returned as the
// context's error, wrapped in stead.ErrUnavailable for a deadline. Writes never return
// stead.ErrTimeout.
//
// # Durability
//
// sqlitedb.Config.Synchronous chooses between sqlitedb.SyncNormal, the default, and
// sqlitedb.SyncFull, for every component on the DB. In WAL mode NORMAL syncs the log only when it
// is checkpointed into the database: a commit that returned survives a crash of the process, but
// the last commits before a power loss or an operating-system crash may be lost (the file stays
// consistent, it just ends at an earlier commit). FULL syncs the log at every commit, so every
// commit that returned survives power loss, at the cost of one fsync per transaction. NORMAL is
// the default because a crash of the process is the common failure of a single host, and FULL
// caps a store at the disk's flush rate; use CommitBatch to amortise the fsync when FULL is
// required.
//
// # In memory
//
// A DB opened on sqlitedb.Memory holds one in-memory database that every connection of the DB
// sees, so a store on it works as on a file, beside the other components on the DB, until the DB
// is closed. It has no WAL: a read and a write exclude each other for as long as they overlap
// (the one that comes second waits and tries again), which costs throughput under concurrent
// load but changes no result. It is for tests and demonstrations; use a file in a temporary
// directory when a test needs a second process.
//
// # SQL
//
// Every statement the store sends is a constant of sql.go named after the method that sends it
// (sqlCommitUpdate, sqlLoadForEvents …); Statements returns them by name, for tools that replay
// them.
package sqlitestore
