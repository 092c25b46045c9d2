// Package sqlitetransport is a transport.Transport on SQLite (modernc.org/sqlite, no cgo), for
// workers on one host: the goroutines of one process, or several processes on one file.
//
//	tr, err := sqlitetransport.Open(ctx, "stead.db")
//
// The database is opened, and its errors classified, by the same plumbing as sqlitestore's
// (internal/sqliteutil), so the two behave alike on one file. It is in WAL mode. The transport
// holds one connection, and every operation is one transaction on it that begins with BEGIN
// IMMEDIATE, taking the write lock first so that two processes never deadlock upgrading a read
// lock. Operations of one process queue on that connection (honouring ctx); when another process
// holds the lock the transaction is retried for up to the busy timeout (WithBusyTimeout, default
// 5 s; zero does not wait), after which the call fails with an error matching
// stead.ErrUnavailable, nothing written; a ctx that ends first fails it with an error matching
// ctx's, nothing written either. SQLITE_BUSY never escapes raw.
//
// The tables are transport_messages and transport_groups, with transport_migrations
// recording their schema version, beside whatever else the file holds (an execution store may
// share it). Wait wakes at once on a publish, ack or nack of this process; changes made by
// another process are noticed by polling (WithPollInterval, default 50 ms).
//
// Durability follows WithSynchronous: SyncNormal (the default) survives a crash of the process,
// SyncFull also a power loss, at one fsync per operation.
package sqlitetransport
