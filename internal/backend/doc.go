// Package backend opens a store and a transport on one database named by a single string: a
// SQLite file path or a PostgreSQL URL. The CLI and the benchmark scenario share it.
package backend
