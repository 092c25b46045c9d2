package pgturn

import "github.com/steadhq/stead/internal/pgutil"

// queries holds every statement of the store with the schema already spliced in, built once per
// Store so a call formats nothing.
type queries struct {
}

func newQueries(schema string) *queries {
	x := func(sql string) string { return pgutil.Expand(sql, schema) }
	_ = x
	return &queries{}
}
