// Package sqliteutil is the SQLite plumbing shared by every stead backend on modernc.org/sqlite:
// opening a database as one writer connection plus a reader pool with the pragmas stead relies on,
// versioned migrations, the mapping of driver errors to the stead sentinels, and the retry of a
// transaction that found the database locked by another process.
package sqliteutil
