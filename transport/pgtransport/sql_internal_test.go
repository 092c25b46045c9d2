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

// TestStatementsPairedByName checks that every statement of sql.go is expanded under its own name
// with its own text, that nothing else is, and that each fills a field of its own.
func TestStatementsPairedByName(t *testing.T) {
	consts := sqlConstants(t)
	var s statements
	named := s.byName()
	seen := map[*string]string{}
	for name, st := range named {
		text, ok := consts[name]
		switch {
		case !ok:
			t.Errorf("%s is sent but is no constant of sql.go", name)
		case st.text != text:
			t.Errorf("%s is sent with another constant's text", name)
		}
		if other, dup := seen[st.dst]; dup {
			t.Errorf("%s and %s fill one field", name, other)
		}
		seen[st.dst] = name
	}
	for name := range consts {
		if _, ok := named[name]; !ok {
			t.Errorf("%s of sql.go is never sent", name)
		}
	}
	s = newStatements("app")
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		text := v.Field(i).String()
		if text == "" || strings.Contains(text, "{schema}") || !strings.Contains(text, pgdb.Qualifier("app")) {
			t.Errorf("field %s is %q, want a statement expanded for schema app", v.Type().Field(i).Name, text)
		}
	}
}
