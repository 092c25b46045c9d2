package pgstore

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
)

// sqlConstants returns the text of every sqlX constant of sql.go, by X.
func sqlConstants(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "sql.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "sql") {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s is not a string literal: keep every statement one literal", name.Name)
				}
				text, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				texts[strings.TrimPrefix(name.Name, "sql")] = text
			}
		}
	}
	return texts
}

// TestStatementsPairedByName holds the constants of sql.go, the statements a store holds and
// what Statements reports to the same names: the statement field X, sqlByName["sqlX"] and
// Statements()["X"] are the text of the constant sqlX (the schema expanded in the field and in
// Statements), and nothing is left unpaired.
func TestStatementsPairedByName(t *testing.T) {
	const schema = "s"
	texts := sqlConstants(t)
	if len(texts) == 0 {
		t.Fatal("no sql constants in sql.go")
	}
	held, err := newStatements(schema)
	if err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(held)
	fields := map[string]bool{}
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		fields[name] = true
		text, ok := texts[name]
		if !ok {
			t.Errorf("statements.%s has no constant sql%s", name, name)
			continue
		}
		if got, want := v.Field(i).String(), pgdb.Expand(text, schema); got != want {
			t.Errorf("statements.%s is not the text of sql%s", name, name)
		}
	}
	reported := Statements(schema)
	for name, text := range texts {
		if !fields[name] {
			t.Errorf("sql%s is held by no field of statements", name)
		}
		if got, ok := sqlByName["sql"+name]; !ok || got != text {
			t.Errorf("sqlByName[%q] is not the text of sql%s", "sql"+name, name)
		}
		if got, ok := reported[name]; !ok || got != pgdb.Expand(text, schema) {
			t.Errorf("Statements()[%q] is not the text of sql%s", name, name)
		}
	}
	if len(sqlByName) != len(texts) {
		t.Errorf("sqlByName names %d statements, sql.go has %d: %v", len(sqlByName), len(texts), slices.Sorted(maps.Keys(sqlByName)))
	}
	if len(reported) != len(texts) {
		names := slices.Sorted(maps.Keys(reported))
		t.Errorf("Statements names %d statements, sql.go has %d: %v", len(reported), len(texts), names)
	}
}

// TestStatementsPrepare prepares every statement on a migrated schema, so that a typo or a
// column that does not exist fails here rather than on the first call that sends it.
func TestStatementsPrepare(t *testing.T) {
	pool := pgdbtest.Pool(t)
	ctx := context.Background()
	schema := pgdbtest.NewName(t)
	t.Cleanup(func() { pgdbtest.Drop(t, pool, schema) })
	if err := pgdb.Migrate(ctx, pool, schema, migrationTable, migrations()); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for name, sql := range Statements(schema) {
		sql = strings.NewReplacer("{limit}", "10", "{where}", " WHERE id > $1::text").Replace(sql)
		if strings.HasPrefix(name, "ListAttr") { // a condition of List's and Count's {where}
			value := "$2::text"
			if name == "ListAttrNum" {
				value = "$3::bigint"
			}
			sql = pgdb.Expand(`SELECT id FROM {schema}stead_executions WHERE `, schema) +
				strings.NewReplacer("$K", "$1", "$T", "$2", "{op}", "<=", "$V", value).Replace(sql)
		}
		if _, err := conn.Conn().Prepare(ctx, "", sql); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
