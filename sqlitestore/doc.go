// Package sqlitestore is the SQLite execution store of stead: durable on one host with nothing to
// install, built on modernc.org/sqlite (pure Go, no cgo). It implements stead.Store and passes the
// storetest conformance suite.
//
// # Connections
//
// A Store holds one writer connection and a pool of read-only connections on the same file, in
// WAL mode. Every write method is one transaction on the writer that begins with BEGIN IMMEDIATE:
// it takes the database's write lock first, so two writers (goroutines of this process or other
// processes) never deadlock upgrading a read lock, and the version compare-and-swap inside it
// needs no application lock. Writers of this process queue for the one connection (honouring
// ctx while they wait); readers run beside the writer and see every commit that finished before
// they began. One writer connection is also the fastest choice: SQLite lets one writer in at a
// time anyway, and more writer connections would only add lock hand-offs.
//
// ctx is honoured while a write queues and while it waits for a write lock held by another
// process. Once the lock is held, the statements run to the end (ctx is checked between them)
// and COMMIT is never interrupted, so a write either lands whole or writes nothing, and the
// caller always knows which. Not binding each statement to ctx also spares the driver a watcher
// goroutine per statement, which halves the cost of a commit on a busy machine.
//
// Several processes may open the same file. A writer that finds the write lock held waits up to
// the busy timeout (WithBusyTimeout, default 5 s); after that the call fails with an error
// matching stead.ErrUnavailable and nothing is written. SQLITE_BUSY never escapes raw.
//
// # Errors
//
// Errors wrap the stead sentinels. A lost compare-and-swap is a *stead.ConflictError; bad input
// is stead.ErrInvalid and never reaches SQLite. Any other failed write has written nothing: a
// lock held elsewhere past the busy timeout, or a deadline that passed while queueing or waiting
// for the lock, wraps stead.ErrUnavailable (with context.DeadlineExceeded in the chain for the
// latter); a cancelled context is returned as the context's error. Writes never return
// stead.ErrTimeout.
//
// # Durability
//
// WithSynchronous chooses between SyncNormal, the default, and SyncFull. In WAL mode NORMAL
// syncs the log only when it is checkpointed into the database: a commit that returned survives a
// crash of the process, but the last commits before a power loss or an operating-system crash may
// be lost (the file stays consistent, it just ends at an earlier commit). FULL syncs the log at
// every commit, so every commit that returned survives power loss, at the cost of one fsync per
// transaction. NORMAL is the default because a crash of the process is the common failure of a
// single host, and FULL caps a store at the disk's flush rate; use CommitBatch to amortise the
// fsync when FULL is required.
//
// # In memory
//
// Open(ctx, ":memory:") gives a private in-memory database for tests: one connection serves
// writes and reads alike (an in-memory database exists only on the connection that created it),
// and the data is gone at Close. Use a file in a temporary directory when a test needs readers
// beside the writer or a second process.
package sqlitestore
