package pgtransport

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"reflect"
	"strings"
	"testing"

	"github.com/steadhq/stead/pgdb"
)

// sqlConstants returns the value of every constant of sql.go whose name starts with "sql": the
// statements the transport sends.
func sqlConstants(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "sql.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}}
	if _, err := (&types.Config{}).Check("pgtransport", fset, []*ast.File{f}, info); err != nil {
		t.Fatalf("sql.go must hold constants only: %v", err)
	}
	out := map[string]string{}
	for id, obj := range info.Defs {
		if c, ok := obj.(*types.Const); ok && strings.HasPrefix(id.Name, "sql") {
			out[id.Name] = constant.StringVal(c.Val())
		}
	}
	return out
}

// TestStatementsPairedByName checks that every statement of sql.go, constant sqlX, has a field X
// of statements and every field a constant, that statementTexts holds each constant under its own
// name and nothing else, and that newStatements fills each field with its own statement expanded.
func TestStatementsPairedByName(t *testing.T) {
	consts := sqlConstants(t)
	typ := reflect.TypeFor[statements]()
	fields := map[string]bool{}
	for i := range typ.NumField() {
		fields["sql"+typ.Field(i).Name] = true
	}
	for name := range consts {
		if !fields[name] {
			t.Errorf("%s of sql.go has no field %s in statements", name, name[3:])
		}
		if _, ok := statementTexts[name]; !ok {
			t.Errorf("%s of sql.go is not in statementTexts", name)
		}
	}
	for name := range fields {
		if _, ok := consts[name]; !ok {
			t.Errorf("field %s of statements has no constant %s in sql.go", name[3:], name)
		}
	}
	for name, text := range statementTexts {
		if want, ok := consts[name]; !ok || text != want {
			t.Errorf("statementTexts holds under %s a text that is not that constant's", name)
		}
	}
	s, err := newStatements("app")
	if err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		name := typ.Field(i).Name
		if got, want := v.Field(i).String(), pgdb.Expand(consts["sql"+name], "app"); got != want || !strings.Contains(got, pgdb.Qualifier("app")) {
			t.Errorf("field %s is %q, want sql%s expanded for schema app", name, got, name)
		}
	}
}
