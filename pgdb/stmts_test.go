package pgdb_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/steadhq/stead/pgdb"
)

func TestExpandByName(t *testing.T) {
	type pair struct {
		Load  string
		Store string
	}
	type unexported struct {
		Load string
		load string //lint:ignore U1000 the field this case refuses
	}
	type notString struct {
		Load  string
		Count int
	}
	type embedded struct {
		pair
	}
	texts := map[string]string{
		"sqlLoad":  `SELECT v FROM {schema}kv WHERE k = $1`,
		"sqlStore": `INSERT INTO {schema}kv (k, v) VALUES ($1, $2)`,
		"columns":  `k, v`,                                // a fragment: no field needed
		"sqlScan":  `SELECT k, v FROM {schema}kv {where}`, // built at call time: no field needed
	}
	tests := []struct {
		name    string
		set     any
		texts   map[string]string
		schema  string
		want    any    // the filled struct, when no error
		wantErr string // a part of the error, when one
	}{
		{name: "filled by name, schema spliced in", set: &pair{}, texts: texts, schema: "tenant",
			want: &pair{Load: `SELECT v FROM "tenant".kv WHERE k = $1`, Store: `INSERT INTO "tenant".kv (k, v) VALUES ($1, $2)`}},
		{name: "no schema: search_path", set: &pair{}, texts: texts,
			want: &pair{Load: `SELECT v FROM kv WHERE k = $1`, Store: `INSERT INTO kv (k, v) VALUES ($1, $2)`}},
		{name: "empty struct", set: &struct{}{}, texts: texts, want: &struct{}{}},
		{name: "field without a text is named", set: &pair{}, texts: map[string]string{"sqlLoad": "SELECT 1"},
			wantErr: "Store"},
		{name: "text under another name does not fill", set: &pair{}, texts: map[string]string{"sqlLoad": "SELECT 1", "Store": "SELECT 2", "sqlstore": "SELECT 3"},
			wantErr: "Store"},
		{name: "unexported field", set: &unexported{}, texts: map[string]string{"sqlLoad": "SELECT 1", "sqlload": "SELECT 2"},
			wantErr: "load"},
		{name: "non-string field", set: &notString{}, texts: map[string]string{"sqlLoad": "SELECT 1", "sqlCount": "SELECT 2"},
			wantErr: "Count"},
		{name: "embedded struct", set: &embedded{}, texts: texts, wantErr: "pair"},
		{name: "not a pointer", set: pair{}, texts: texts, wantErr: "pointer to a struct"},
		{name: "nil pointer", set: (*pair)(nil), texts: texts, wantErr: "pointer to a struct"},
		{name: "pointer to a non-struct", set: new(string), texts: texts, wantErr: "pointer to a struct"},
		{name: "nil", set: nil, texts: texts, wantErr: "pointer to a struct"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := pgdb.ExpandByName(tt.set, tt.texts, tt.schema)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ExpandByName = %v, want an error naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tt.set, tt.want) {
				t.Errorf("ExpandByName filled %+v, want %+v", tt.set, tt.want)
			}
		})
	}
}
