// Package sqlitedb is the SQLite plumbing every stead package on modernc.org/sqlite shares,
// exported so that a backend written outside this module can do everything the bundled ones do:
//
//   - Open, which opens one database file (or a process-local in-memory database) with the pragmas
//     stead relies on: WAL, BEGIN IMMEDIATE writers, a read-only reader pool. The DB is the
//     application's: sqlitestore.New, sqlitetransport.New and sqliteturn.New take it and never
//     close it.
//   - DB.Lock, the write gate that serialises the writes of every component on one DB in this
//     process, so that a store and a transport on one file queue instead of contending.
//   - The writer: one connection per DB on which every component prepares its write statements
//     (PrepareWrites; PrepareByName pairs each field with the constant of its name, the one way
//     the components hold their statements) and writes (Write: a transaction under the gate,
//     retried while another process holds the file). Because they share it, one transaction can
//     hold the writes of several (Begin): a store's commit with a transport's publish and acks.
//   - Retry, which re-runs a transaction that found the file locked by another process, within
//     the busy timeout.
//   - Classify: SQLite errors mapped to the stead sentinels.
//   - Migrate: a component's embedded migration files applied in one write transaction.
package sqlitedb
