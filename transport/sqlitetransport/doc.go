// Package sqlitetransport is a transport backend on SQLite (modernc.org/sqlite, no cgo), for
// workers on one host: the goroutines of one process, or several processes on one file. It runs
// on the application's sqlitedb.DB, which it never closes, beside whatever else the file holds:
//
//	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: "stead.db"})
//	tr, err := sqlitetransport.New(ctx, db)
//	defer tr.Close() // before db.Close
//
// New returns the checked *transport.Transport in front of the SQLite backend.
//
// The transport writes on the DB's one writer connection, which every component on the file
// shares (sqlitedb.DB.PrepareWrites, Write), and every operation is one transaction on it that
// begins with BEGIN IMMEDIATE, taking the write lock first so that two processes never deadlock
// upgrading a read lock. PublishBatchTx, AckBatchTx and NackTx run inside a transaction the
// caller holds (sqlitedb.DB.Begin) instead, beside the store's commit (worker/sqlitetx), and wake
// this process's waiters only once it commits. The writes of one process queue on the DB's write gate
// (sqlitedb.DB.Lock), with those of every other component on the DB (an execution store), in
// request order and honouring ctx. When another process holds the file's lock the transaction is
// retried for up to the DB's busy timeout (sqlitedb.Config.BusyTimeout), after which the call
// fails with an error matching stead.ErrUnavailable, nothing written; a ctx that ends first fails
// it with an error matching ctx's, nothing written either. SQLITE_BUSY never escapes raw.
// Durability is the DB's (sqlitedb.Config.Synchronous).
//
// The tables are transport_messages and transport_groups, and for flows transport_flow_keys and
// transport_flow_groups, with transport_migrations recording their schema version. Wait wakes at
// once on a publish, ack, nack or forget of this process; changes made by another process are
// noticed by polling (WithPollInterval, default 50 ms).
//
// The backend honours flows (transport.Limiter). A key's limits, admitted count and rate bucket
// are a row of transport_flow_keys, a group's remembered key a row of transport_flow_groups. A
// keyed group that waits for admission is marked on its row (its place in its key's queue) and is
// left out of the claim order's partial indexes, so a claim never walks it; it keeps its place in
// the round-robin for when it is admitted. Groups are admitted in the write transaction of the
// publish, ack or forget that makes room, so admission is exact across processes sharing the
// file. A group waiting only for a rate token is admitted by the first claim, of any process,
// after the token is due: each claim first probes for such keys, one search of an index that
// holds only keys with groups waiting so. Wait wakes when the earliest rate token this process
// scheduled comes due; it notices the others, and those another process scheduled, within the
// poll interval. Unkeyed operations pay for flows a primary-key probe when they create a group and
// that one search per claim.
package sqlitetransport
