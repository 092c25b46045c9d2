package sqlitestore

import (
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/sqlitedb"
)

// sqlConstants returns every constant of sql.go whose name starts with sql, with its value, as
// the compiler sees them.
func sqlConstants(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "sql.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importer.Default()}
	pkg, err := conf.Check("sqlitestore", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatalf("type-checking sql.go on its own: %v", err)
	}
	out := map[string]string{}
	for _, name := range pkg.Scope().Names() {
		if c, ok := pkg.Scope().Lookup(name).(*types.Const); ok && strings.HasPrefix(name, "sql") {
			out[name] = constant.StringVal(c.Val())
		}
	}
	return out
}

// fieldNames returns the statement names the fields of set are prepared from.
func fieldNames(set any) []string {
	t := reflect.TypeOf(set).Elem()
	var names []string
	for i := range t.NumField() {
		names = append(names, "sql"+t.Field(i).Name)
	}
	return names
}

// TestStatementsPairByName checks the three names of every statement against each other: the
// constant in sql.go, its entry in statements (what is prepared, and what Statements hands out)
// and the field it is prepared into. Every constant but List's parts is prepared exactly once,
// from its own text, and every statement and every shape of List prepares on a fresh schema.
func TestStatementsPairByName(t *testing.T) {
	t.Parallel()
	consts := sqlConstants(t)
	for name, text := range statements {
		if c, ok := consts[name]; !ok {
			t.Errorf("statements[%q] names no constant of sql.go", name)
		} else if c != text {
			t.Errorf("statements[%q] is not the text of the constant %s", name, name)
		}
	}
	for name := range consts {
		if _, ok := statements[name]; !ok && !strings.HasPrefix(name, "sqlList") {
			t.Errorf("constant %s is not in statements: nothing prepares it", name)
		}
	}
	prepared := map[string]int{}
	for _, name := range append(fieldNames(&writeStmts{}), fieldNames(&readStmts{})...) {
		prepared[name]++
	}
	for name, n := range prepared {
		if _, ok := statements[name]; !ok {
			t.Errorf("a field is prepared from %s, which statements does not hold", name)
		}
		if n > 1 {
			t.Errorf("%s is prepared into %d fields", name, n)
		}
	}
	for name := range statements {
		if prepared[name] == 0 {
			t.Errorf("no field is prepared from %s", name)
		}
	}
	if got := Statements(); !maps.Equal(got, statements) {
		t.Error("Statements() differs from statements")
	}

	db, err := sqlitedb.Open(t.Context(), sqlitedb.Config{Path: sqlitedb.Memory})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := sqlitedb.Migrate(t.Context(), db, migrationsTable, migrations()); err != nil {
		t.Fatal(err)
	}
	for name, text := range statements {
		st, err := db.W.PrepareContext(t.Context(), text)
		if err != nil {
			t.Errorf("%s does not prepare: %v", name, err)
			continue
		}
		st.Close()
	}
	var shapes []listShape
	for _, def := range []bool{false, true} {
		for n := range 8 { // a filter holds each of the seven statuses at most once
			for _, roots := range []bool{false, true} {
				shapes = append(shapes, listShape{definition: def, statuses: n, rootsOnly: roots})
			}
		}
	}
	// Each part of the id prefix and the time windows alone, and all of them at once.
	shapes = append(shapes, listShape{prefix: true}, listShape{prefix: true, prefixEnd: true})
	for i := range 6 {
		var sh listShape
		sh.bounds[i] = true
		shapes = append(shapes, sh)
	}
	shapes = append(shapes, listShape{definition: true, statuses: 2, rootsOnly: true, prefix: true, prefixEnd: true,
		bounds: [6]bool{true, true, true, true, true, true}})
	// Each comparison on a string and on a number, a set, and several conditions at once.
	for _, op := range []stead.AttrOp{stead.AttrEq, stead.AttrLt, stead.AttrLe, stead.AttrGt, stead.AttrGe} {
		for _, v := range []stead.AttrValue{stead.AttrString("x"), stead.AttrInt(1)} {
			shapes = append(shapes, listShape{attrParts: attrParts([]stead.AttrFilter{stead.Where("k", op, v)})})
		}
	}
	shapes = append(shapes, listShape{definition: true, statuses: 2, attrParts: attrParts([]stead.AttrFilter{
		stead.Where("k", stead.AttrIn, stead.AttrInt(1), stead.AttrInt(2)),
		stead.Where("j", stead.AttrIn, stead.AttrString("a")),
		stead.Where("t", stead.AttrGe, stead.AttrTime(time.Unix(1, 0)))})})
	for _, sh := range slices.Clone(shapes) { // and Count's statement of each
		sh.count = true
		shapes = append(shapes, sh)
	}
	for _, sh := range shapes {
		st, err := db.R.PrepareContext(t.Context(), listSQL(sh))
		if err != nil {
			t.Errorf("listSQL(%+v) does not prepare: %v", sh, err)
			continue
		}
		st.Close()
	}
}
