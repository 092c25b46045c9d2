package sqlitedb

import (
	"context"
	"fmt"
	"io/fs"
	"regexp"

	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/internal/migration"
)

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// Migrate applies the migrations in fsys not yet recorded in the component's version table, in
// order, in one write transaction under d's write gate: two processes opening the same file at
// once serialise on SQLite's write lock, the first applies, the second finds nothing to do.
//
// The files of fsys are the component's migrations, at its root: <version>_<name>.sql with a
// three-digit version (001_init.sql). Versions only grow: once released, a migration file never
// changes. A database whose recorded version is newer than the last file is refused, so an old
// binary never writes to a schema it does not understand.
func Migrate(ctx context.Context, d *DB, table string, fsys fs.FS) error {
	if !tableName.MatchString(table) {
		return check.Invalidf("migrate: unsafe version table name %q", table)
	}
	ms, err := migration.Load(fsys, ".")
	if err != nil {
		return fmt.Errorf("migrate %s: %w", table, err)
	}
	if err := d.Lock(ctx); err != nil {
		return err
	}
	defer d.Unlock()
	db := d.W
	busy := d.BusyTimeout
	err = Retry(ctx, busy, func() error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (
			version    INTEGER PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at INTEGER NOT NULL DEFAULT (unixepoch()))`); err != nil {
			return err
		}
		var current int
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+table).Scan(&current); err != nil {
			return err
		}
		if len(ms) > 0 && current > ms[len(ms)-1].Version {
			return fmt.Errorf("schema version %d is newer than this build knows (%d)", current, ms[len(ms)-1].Version)
		}
		for _, m := range ms {
			if m.Version <= current {
				continue
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO `+table+` (version, name) VALUES (?, ?)`, m.Version, m.Name); err != nil {
				return err
			}
		}
		return tx.Commit()
	})
	if err != nil {
		return fmt.Errorf("migrate %s: %w", table, Classify(err))
	}
	return nil
}
