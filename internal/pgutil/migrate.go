package pgutil

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead/internal/migration"
)

// migrateLockKey is the first half of the advisory lock every stead migration takes ("stea").
const migrateLockKey int32 = 0x73746561

// Migration is one versioned step of a schema. SQL may hold several statements and uses the
// {schema} placeholder in front of every object name (see Expand).
type Migration = migration.Migration

// Migrate applies the migrations not yet recorded in the component's version table, in order, in
// one transaction that first takes a transaction-scoped advisory lock keyed by the schema (one lock
// for every stead component, so that two components creating the same schema never race on it).
// Many processes may call it at once: the first applies, the others wait and find nothing to do.
// When schema is set it is created if missing. Migrate takes no session state, so it works
// behind PgBouncer in transaction mode.
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema, table string, ms []Migration) error {
	if schema != "" {
		if err := CheckSchema(schema); err != nil {
			return err
		}
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
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
