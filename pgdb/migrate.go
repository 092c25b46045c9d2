package pgdb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/internal/migration"
)

// migrateLockKey is the first half of the advisory lock every stead migration takes ("stea").
const migrateLockKey int32 = 0x73746561

// Migrate applies the migrations in fsys not yet recorded in the component's version table, in
// order, in
// one transaction that first takes a transaction-scoped advisory lock keyed by the schema (one lock
// for every stead component, so that two components creating the same schema never race on it).
// Many processes may call it at once: the first applies, the others wait and find nothing to do.
// When schema is set it is created if missing. Migrate takes no session state, so it works
// behind PgBouncer in transaction mode.
//
// The files of fsys are the component's migrations, at its root: <version>_<name>.sql with a
// three-digit version (001_init.sql), each using the {schema} placeholder in front of every object
// name (see Expand). Versions only grow: once released, a migration file never changes. A
// database whose recorded version is newer than the last file is refused, so an old binary never
// writes to a schema it does not understand.
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema, table string, fsys fs.FS) error {
	if schema != "" {
		if err := CheckSchema(schema); err != nil {
			return err
		}
	}
	if err := checkTable(table); err != nil {
		return err
	}
	ms, err := migration.Load(fsys, ".")
	if err != nil {
		return fmt.Errorf("migrate %s: %w", table, err)
	}
	// A migration may rightly run long (an index on a big table, the wait for another process's
	// migration under the lock): no per-call deadline, only the caller's.
	ctx = WithoutCallTimeout(ctx)
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, migrateLockKey, schema); err != nil {
			return err
		}
		if schema != "" {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
				return err
			}
		}
		vt := Qualifier(schema) + pgx.Identifier{table}.Sanitize()
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+vt+` (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(max(version), 0) FROM `+vt).Scan(&current); err != nil {
			return err
		}
		if len(ms) > 0 && current > ms[len(ms)-1].Version {
			return fmt.Errorf("schema version %d is newer than this build knows (%d)", current, ms[len(ms)-1].Version)
		}
		for _, m := range ms {
			if m.Version <= current {
				continue
			}
			if _, err := tx.Exec(ctx, Expand(m.SQL, schema)); err != nil {
				return fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+vt+` (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate %s: %w", table, Classify(err))
	}
	return nil
}

// AppliedVersion returns the highest migration version recorded in the component's version
// table, or 0 when the table does not exist yet. It runs no DDL, for deployments that migrate
// separately and only want to check the schema on start.
func AppliedVersion(ctx context.Context, pool *pgxpool.Pool, schema, table string) (int, error) {
	if err := checkTable(table); err != nil {
		return 0, err
	}
	var have int
	err := pool.QueryRow(ctx, `SELECT COALESCE(max(version), 0) FROM `+Qualifier(schema)+pgx.Identifier{table}.Sanitize()).Scan(&have)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table: never migrated
		return 0, nil
	}
	if err != nil {
		return 0, Classify(err)
	}
	return have, nil
}

// LatestVersion returns the highest version among the migration files of fsys, which is what
// AppliedVersion reports once Migrate has run: a component that migrates separately compares the
// two on start.
func LatestVersion(fsys fs.FS) (int, error) {
	ms, err := migration.Load(fsys, ".")
	if err != nil || len(ms) == 0 {
		return 0, err
	}
	return ms[len(ms)-1].Version, nil
}

func checkTable(table string) error {
	if !schemaName.MatchString(table) {
		return check.Invalidf("unsafe version table name %q", table)
	}
	return nil
}
