package pgturn_test

import (
	"testing"

	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/internal/check/jsonbtest"
	"github.com/steadhq/stead/pgdb/pgdbtest"
)

// check.JSON refuses exactly the documents this server's jsonb refuses, no more: each case of the
// shared table is cast on the server, and both must agree with the table.
func TestJSONRulesAgreeWithPostgreSQL(t *testing.T) {
	t.Parallel()
	pool := pgdbtest.Pool(t)
	for _, tt := range jsonbtest.Cases() {
		t.Run(tt.Name, func(t *testing.T) {
			_, castErr := pool.Exec(t.Context(), `SELECT $1::text::jsonb`, tt.Doc)
			if stored := castErr == nil; stored != tt.Stored {
				t.Errorf("the server stores it: %v (%v); the table says %v", stored, castErr, tt.Stored)
			}
			if accepted := check.JSON("doc", []byte(tt.Doc)) == nil; accepted != tt.Stored {
				t.Errorf("check.JSON accepts it: %v; the table says %v", accepted, tt.Stored)
			}
		})
	}
}
