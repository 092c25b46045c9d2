package sqliteturn

import (
	"database/sql"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/steadhq/stead/sqlitedb"
)

// sqlConstants returns every constant of sql.go with its value, as the compiler sees it.
func sqlConstants(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "sql.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := (&types.Config{Importer: importer.Default()}).Check("sqliteturn", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatalf("type-checking sql.go on its own: %v", err)
	}
	out := map[string]string{}
	for _, name := range pkg.Scope().Names() {
		if c, ok := pkg.Scope().Lookup(name).(*types.Const); ok {
			out[name] = constant.StringVal(c.Val())
		}
	}
	return out
}

// statementNames returns the statements of sql.go: the constants named sql...
func statementNames(consts map[string]string) []string {
	var names []string
	for name := range consts {
		if strings.HasPrefix(name, "sql") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Every statement is named sql + a method of Backend that sends it, optionally followed by a
// suffix starting with an upper-case letter (sqlFinishResolutionFailed, sqlLoadOutboxStatus).
func TestStatementsAreNamedAfterTheirMethod(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[*Backend]()
	for _, name := range statementNames(sqlConstants(t)) {
		rest := strings.TrimPrefix(name, "sql")
		named := false
		for i := range typ.NumMethod() {
			after, ok := strings.CutPrefix(rest, typ.Method(i).Name)
			named = named || ok && (after == "" || unicode.IsUpper(rune(after[0])))
		}
		if !named {
			t.Errorf("%s names no method of Backend", name)
		}
	}
}

// Every statement of sql.go is sent somewhere, through its field (st.X) and never as the
// constant itself, and no SQL text is written outside sql.go.
func TestStatementsLiveInSQLGo(t *testing.T) {
	t.Parallel()
	consts := sqlConstants(t)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	keywords := []string{"SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "BEGIN", "COMMIT", "ROLLBACK", "PRAGMA"}
	for _, path := range files {
		if path == "sql.go" || strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "st" {
					used["sql"+n.Sel.Name] = true
				}
			case *ast.Ident:
				if strings.HasPrefix(n.Name, "sql") && len(n.Name) > 3 && unicode.IsUpper(rune(n.Name[3])) {
					t.Errorf("%s: %s is read outside sql.go: send its field, st.%s", path, n.Name, n.Name[3:])
				}
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					s, _ := strconv.Unquote(n.Value)
					s = strings.TrimSpace(s)
					for _, k := range keywords {
						if s == k || strings.HasPrefix(s, k+" ") || strings.HasPrefix(s, k+"\n") {
							t.Errorf("%s: SQL text outside sql.go: %.40q", path, s)
						}
					}
				}
			}
			return true
		})
	}
	for name := range used {
		if _, ok := consts[name]; !ok {
			t.Errorf("st.%s is used but sql%s is no constant of sql.go", name[3:], name[3:])
		}
	}
	for _, name := range statementNames(consts) {
		if !used[name] {
			t.Errorf("%s is never sent: no st.%s outside the tests", name, name[3:])
		}
	}
}

// Every statement is accepted by SQLite against the migrated schema: each is prepared on its own,
// so a failure names the statement.
func TestEveryStatementPrepares(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: filepath.Join(t.TempDir(), "turns.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := New(ctx, db); err != nil {
		t.Fatal(err)
	}
	consts := sqlConstants(t)
	for _, name := range statementNames(consts) {
		st, err := db.W.PrepareContext(ctx, consts[name])
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		st.Close()
	}
}

// Every statement constant sqlX has a field X in statements and every field a constant, and
// statementTexts holds each constant under its own name: so sqlitedb.PrepareByName fills every
// field with its own statement and no other.
func TestStatementsPairedByName(t *testing.T) {
	t.Parallel()
	consts := sqlConstants(t)
	want := statementNames(consts)
	var fields []string
	typ := reflect.TypeFor[statements]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Type != reflect.TypeFor[*sql.Stmt]() {
			t.Errorf("field %s of statements is a %v, not a *sql.Stmt", f.Name, f.Type)
		}
		fields = append(fields, "sql"+typ.Field(i).Name)
	}
	slices.Sort(fields)
	if !slices.Equal(fields, want) {
		t.Errorf("fields of statements, as sqlX:\n%v\nwant the statements of sql.go:\n%v", fields, want)
	}
	if keys := slices.Sorted(maps.Keys(statementTexts)); !slices.Equal(keys, want) {
		t.Errorf("statementTexts names:\n%v\nwant the statements of sql.go:\n%v", keys, want)
	}
	for name, text := range statementTexts {
		if consts[name] != text {
			t.Errorf("statementTexts[%q] is not the text of the constant %s", name, name)
		}
	}
}
