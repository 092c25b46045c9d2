package sqliteutil

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"time"

	"github.com/steadhq/stead/internal/migration"
)

// Migration is one versioned step of a schema. SQL may hold several statements.
type Migration = migration.Migration

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// Migrate applies the migrations not yet recorded in table, in order, in one write transaction on
// db (a pool opened by Open, whose transactions begin IMMEDIATE): two processes opening the same
// file at once serialise on the write lock, the first applies, the second finds nothing to do. A
// database whose recorded version is newer than the last migration known here is refused, so an
// old binary never writes to a schema it does not understand.
func Migrate(ctx context.Context, db *sql.DB, busy time.Duration, table string, ms []Migration) error {
	if !tableName.MatchString(table) {
		return fmt.Errorf("migrate: unsafe table name %q", table)
	}
	err := Retry(ctx, busy, func() error {
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
