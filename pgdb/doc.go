// Package pgdb is the PostgreSQL plumbing every stead package on pgx shares, exported so that a
// backend written outside this module can do everything the bundled ones do:
//
//   - Open, the one convenience that opens a *pgxpool.Pool from a URL with the settings of Config
//     (pool size, statement timeout, PgBouncer mode, a retried first connection). The pool is the
//     application's: pgstore.New, pgtransport.New and pgturn.New take it and never close it.
//   - What keeps a silent server (a dead host, a partition, a proxy whose server is gone) from
//     holding a call, on every pool Open makes: a deadline on each call whose context has none
//     (Config.CallTimeout; WithoutCallTimeout exempts one), a connect timeout per host, TCP
//     keepalives and TCP_USER_TIMEOUT, a liveness ping at acquire, and a silent host's idle
//     connections closed at once. ParseConnConfig gives one connection outside a pool the same.
//   - Several hosts in one URL: connections go to the read-write one, following a promotion; a
//     connection on a read-only server is closed at its first refused write (ErrUnavailable).
//   - CheckSchema, Qualifier and Expand: validated, quoted schema names in SQL text; ExpandByName,
//     how a component holds its statements: struct field X filled from constant sqlX, expanded.
//   - Classify: pgx and PostgreSQL errors mapped to the stead sentinels (ErrUnavailable: nothing
//     was written; ErrTimeout: the outcome is unknown; ErrConflict; ErrInvalid; ErrClosed).
//   - Migrate, AppliedVersion and LatestVersion: a component's embedded migration files applied
//     in one transaction under an advisory lock, safe from many processes at once and through
//     PgBouncer in transaction mode.
//
// The pgdbtest package beside it gives tests a fresh schema on a real server.
package pgdb
