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

// Migrate brings the schema up to date: it creates the configured schema if missing, then applies
// the versions not yet recorded, in one transaction. It is safe on every start-up and from many
// processes at once: a transaction-scoped advisory lock serialises concurrent callers, the
// statements are idempotent, and a caller that waited finds nothing left to do. There are no
// down-migrations and no version drops or rewrites anything, so an older release keeps working
// against a newer schema (the columns it does not know are nullable). To remove the store, drop
// its schema.
func (s *Store) Migrate(ctx context.Context) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := pgdb.Migrate(ctx, s.pool, s.schema, versionTable, migrations()); err != nil {
		return fmt.Errorf("pgturn: %w", err)
	}
	return nil
}
