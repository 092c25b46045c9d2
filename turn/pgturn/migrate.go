package pgturn

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/steadhq/stead/pgdb"
)

// The SQL lives in migrations/ and is compiled into the binary, so a deployment carries no
// directory beside the executable.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// versionTable records the applied versions of this component, beside its tables.
const versionTable = "turn_migrations"

// migrations returns the embedded migrations in version order.
func migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded: it is always there
	}
	return sub
}

// migrate brings the schema up to date: it creates the configured schema if missing, then applies
// the versions not yet recorded, in one transaction. A transaction-scoped advisory lock
// serialises concurrent callers, so many processes may start at once: the first applies, the
// others wait and find nothing to do. To remove the backend, drop its schema.
func (s *Backend) migrate(ctx context.Context) error {
	if err := pgdb.Migrate(ctx, s.pool, s.schema, versionTable, migrations()); err != nil {
		return fmt.Errorf("pgturn: %w", err)
	}
	return nil
}

// checkSchema verifies, without DDL, that the schema is at the version this build needs.
func (s *Backend) checkSchema(ctx context.Context) error {
	want, err := pgdb.LatestVersion(migrations())
	if err != nil {
		return fmt.Errorf("pgturn: %w", err)
	}
	have, err := pgdb.AppliedVersion(ctx, s.pool, s.schema, versionTable)
	if err != nil {
		return fmt.Errorf("pgturn: check schema version: %w", err)
	}
	if have < want {
		return fmt.Errorf("pgturn: schema %q is at version %d, this build needs %d: migrate it (New without WithoutMigrate)", s.schema, have, want)
	}
	return nil
}
