package pgturn

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/steadhq/stead/internal/pgutil"
)

// The SQL lives in migrations/ and is compiled into the binary, so a deployment carries no
// directory beside the executable.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// versionTable records the applied versions of this component, beside its tables.
const versionTable = "turn_migrations"

// migrations returns the embedded migrations in version order. A file is named
// <version>_<name>.sql; the version is its decimal prefix.
func migrations() ([]pgutil.Migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	ms := make([]pgutil.Migration, 0, len(names)) // fs.Glob returns names sorted, hence by version
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "migrations/"), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("pgturn: migration file %s is not named <version>_<name>.sql", n)
		}
		if len(ms) > 0 && ms[len(ms)-1].Version >= v {
			return nil, fmt.Errorf("pgturn: migration version %d is not above %d", v, ms[len(ms)-1].Version)
		}
		sql, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		ms = append(ms, pgutil.Migration{Version: v, Name: name, SQL: string(sql)})
	}
	return ms, nil
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
	ms, err := migrations()
	if err != nil {
		return err
	}
	if err := pgutil.Migrate(ctx, s.pool, s.schema, versionTable, ms); err != nil {
		return fmt.Errorf("pgturn: %w", err)
	}
	return nil
}
