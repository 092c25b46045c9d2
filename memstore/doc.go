// Package memstore is the in-memory execution store, for tests and for programs that need no
// durability: hand memstore.New() and a memtransport.New() to worker.Config and worker.Client
// and run your flow in a test with nothing on disk. For durability, sqlitestore (one host) or
// pgstore (many hosts) take its place without a change to the rest.
//
//	store := memstore.New()
//	defer store.Close()
//
// New returns the checked *stead.Store in front of an in-memory backend, so every argument is
// validated and normalised exactly as on sqlitestore and pgstore. The backend keeps each execution
// as its encoded record, as the SQL backends do, and decodes it on every load, so that what a test
// reads back is what production reads back. It keeps the rest of their semantics too (outbox
// sequence numbers that are never reused, one timer per execution and path, a capped trace ring
// with stable indexes, leases on outbox and spawn rows, purge). Everything is held behind one
// mutex and copied in and out: a caller never shares memory with the store.
//
// Nothing survives the process. Use sqlitestore for a durable store on one host.
package memstore
