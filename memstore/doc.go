// Package memstore is the in-memory execution store: the reference backend of the stead.Store
// contract, for tests and for programs that need no durability.
//
// It keeps the semantics of the SQL backends exactly (version compare-and-swap with insert only at
// version 0, outbox sequence numbers that are never reused, timers keyed by execution and path
// with fire times kept at microsecond precision, a capped trace ring with stable indexes, leases
// on outbox and spawn rows, purge) and validates input with the same rules and size limits, so a
// program tested against memstore behaves the same on sqlitestore or pgstore. Everything is held
// behind one mutex and copied in and out: a caller never shares memory with the store.
//
// Nothing survives the process. Use sqlitestore for a durable store on one host.
package memstore
