// Package migration reads the versioned SQL migrations a stead backend embeds in its binary. The
// PostgreSQL and SQLite runners (pgdb.Migrate, sqlitedb.Migrate) apply them; this package only
// owns the file convention, so every backend names and orders its files alike.
package migration

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"
)

var fileName = regexp.MustCompile(`^[a-z0-9_]+$`)

// Migration is one versioned step of a schema.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load returns the migrations in dir of fsys, in version order. Each file is named
// <version>_<name>.sql with a positive three-digit version (001_init.sql) and a name of lower-case
// letters, digits and underscores; versions must strictly increase.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	ms := make([]Migration, 0, len(names))
	for _, n := range names { // fs.Glob returns the names sorted
		base := strings.TrimSuffix(path.Base(n), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 || len(num) != 3 || !fileName.MatchString(name) {
			return nil, fmt.Errorf("migration file %s is not named <version>_<name>.sql", n)
		}
		if len(ms) > 0 && ms[len(ms)-1].Version >= v {
			return nil, fmt.Errorf("migration %s: version %d is not above %d", n, v, ms[len(ms)-1].Version)
		}
		sql, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(sql)})
	}
	return ms, nil
}
