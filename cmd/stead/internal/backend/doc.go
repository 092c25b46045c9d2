// Package backend opens, for the stead command, a store and a transport on one database named by
// a single string: a SQLite file path or a PostgreSQL URL, and the turn stores on the same
// database when a command asks for them. All of them share one handle (a sqlitedb.DB and its
// write gate, or one pgxpool.Pool).
package backend
