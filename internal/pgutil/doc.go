// Package pgutil is the PostgreSQL plumbing shared by every stead backend on pgx: validated schema
// names, a pool that retries its first connection, the mapping of driver errors to the stead
// sentinels, and embedded migrations serialised by an advisory lock.
package pgutil
