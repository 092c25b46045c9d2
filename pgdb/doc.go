// Package pgdb is the PostgreSQL plumbing every stead package on pgx shares, exported so that a
// backend written outside this module can do everything the bundled ones do:
//
//   - Open, the one convenience that opens a *pgxpool.Pool from a URL with the settings of Config
//     (pool size, statement timeout, PgBouncer mode, a retried first connection). The pool is the
//     application's: pgstore.New, pgtransport.New and pgturn.New take it and never close it.
//   - CheckSchema, Qualifier and Expand: validated, quoted schema names in SQL text.
//   - Classify: pgx and PostgreSQL errors mapped to the stead sentinels (ErrUnavailable: nothing
//     was written; ErrTimeout: the outcome is unknown; ErrConflict; ErrInvalid; ErrClosed).
//   - Migrate, AppliedVersion and LatestVersion: a component's embedded migration files applied
//     in one transaction under an advisory lock, safe from many processes at once and through
//     PgBouncer in transaction mode.
//
// The pgdbtest package beside it gives tests a fresh schema on a real server.
package pgdb
