package pgturn

import (
	"sync"

	"github.com/steadhq/stead/pgdb"
)

// statements expands the {schema} placeholder of each statement once per store: SQL is written
// beside the code that runs it, and the schema is named in every statement so that no session
// state (search_path) is needed.
type statements struct {
	schema string
	cache  sync.Map // raw SQL -> expanded SQL
}

func (st *statements) get(raw string) string {
	if v, ok := st.cache.Load(raw); ok {
		return v.(string)
	}
	sql := pgdb.Expand(raw, st.schema)
	st.cache.Store(raw, sql)
	return sql
}
