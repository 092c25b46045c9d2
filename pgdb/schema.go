package pgdb

import (
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/internal/check"
)

var schemaName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// CheckSchema refuses a schema name that is not a plain identifier (letters, digits and
// underscores, not starting with a digit, at most 63 bytes) or that names a system schema. Names
// are never interpolated unquoted, but a strict rule keeps them portable and readable.
func CheckSchema(name string) error {
	if !schemaName.MatchString(name) {
		return check.Invalidf("unsafe schema name %q: use letters, digits and underscores, at most 63", name)
	}
	if l := strings.ToLower(name); strings.HasPrefix(l, "pg_") || l == "information_schema" {
		return check.Invalidf("schema name %q is reserved by PostgreSQL", name)
	}
	return nil
}

// Qualifier returns the quoted schema followed by a dot, or "" for the connection's search_path.
func Qualifier(schema string) string {
	if schema == "" {
		return ""
	}
	return pgx.Identifier{schema}.Sanitize() + "."
}

// Expand replaces every {schema} placeholder in sql with Qualifier(schema).
func Expand(sql, schema string) string {
	return strings.ReplaceAll(sql, "{schema}", Qualifier(schema))
}
