// Package backend opens what a stead command line's --store names: a SQLite file path or a
// PostgreSQL URL becomes the execution store and the transport on one database, with the turn
// stores on the same handle when asked for. The stead commands use it; a binary built with
// package cli can use it for commands of its own.
package backend
