package pgturn

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
)

// sqlFile holds every constant of sql.go by name, with its text: string literals and the other
// constants of the file, joined with +, evaluated as the compiler does.
type sqlFile struct {
	texts    map[string]string // every constant of sql.go
	textsMap map[string]string // statementTexts: each name, with the constant it holds
}

func parseSQLFile(t *testing.T) sqlFile {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "sql.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	exprs := map[string]ast.Expr{}
	out := sqlFile{texts: map[string]string{}, textsMap: map[string]string{}}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST && gen.Tok != token.VAR {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if gen.Tok == token.CONST {
					exprs[name.Name] = vs.Values[i]
					continue
				}
				lit, ok := vs.Values[i].(*ast.CompositeLit)
				if name.Name != "statementTexts" || !ok {
					continue
				}
				for _, elt := range lit.Elts {
					kv := elt.(*ast.KeyValueExpr)
					key, err := strconv.Unquote(kv.Key.(*ast.BasicLit).Value)
					if err != nil {
						t.Fatal(err)
					}
					value, ok := kv.Value.(*ast.Ident)
					if !ok {
						t.Fatalf("sql.go: statementTexts holds %s under a %T, not a constant", key, kv.Value)
					}
					out.textsMap[key] = value.Name
				}
			}
		}
	}
	if len(out.textsMap) == 0 {
		t.Fatal("sql.go: no statementTexts")
	}
	var eval func(ast.Expr) string
	eval = func(e ast.Expr) string {
		switch e := e.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(e.Value)
			if err != nil {
				t.Fatalf("sql.go: %s: %v", e.Value, err)
			}
			return s
		case *ast.BinaryExpr:
			return eval(e.X) + eval(e.Y)
		case *ast.Ident:
			x, ok := exprs[e.Name]
			if !ok {
				t.Fatalf("sql.go: %s is not a constant of the file", e.Name)
			}
			return eval(x)
		}
		t.Fatalf("sql.go: a constant is built from %T", e)
		return ""
	}
	for name, e := range exprs {
		out.texts[name] = eval(e)
	}
	return out
}

// statements returns the names of the statements: the constants named sql...
func (f sqlFile) statements() []string {
	var names []string
	for name := range f.texts {
		if strings.HasPrefix(name, "sql") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Every statement constant sqlX has a field X in statements and every field a constant, and
// statementTexts holds each constant under its own name: so pgdb.ExpandByName fills every field
// with its own statement and no other.
func TestStatementsPairedByName(t *testing.T) {
	f := parseSQLFile(t)
	var fields []string
	typ := reflect.TypeFor[statements]()
	for i := range typ.NumField() {
		fields = append(fields, "sql"+typ.Field(i).Name)
	}
	slices.Sort(fields)
	if want := f.statements(); !slices.Equal(fields, want) {
		t.Errorf("fields of statements, as sqlX:\n%v\nwant the statements of sql.go:\n%v", fields, want)
	}
	keys := slices.Sorted(maps.Keys(statementTexts))
	if want := f.statements(); !slices.Equal(keys, want) {
		t.Errorf("statementTexts names:\n%v\nwant the statements of sql.go:\n%v", keys, want)
	}
	for name, value := range f.textsMap {
		if name != value {
			t.Errorf("statementTexts holds %s under %q", value, name)
		}
	}
	var st statements
	if err := pgdb.ExpandByName(&st, statementTexts, "x"); err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(st)
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if got, want := v.Field(i).String(), pgdb.Expand(f.texts["sql"+name], "x"); got != want {
			t.Errorf("field %s holds %.60q, want the text of sql%s", name, got, name)
		}
	}
}

// Every statement is named sql + a method of Backend that sends it, optionally followed by a
// suffix starting with an upper-case letter (sqlFinishResolutionFailed, sqlCommitInRelease).
func TestStatementsAreNamedAfterTheirMethod(t *testing.T) {
	f := parseSQLFile(t)
	typ := reflect.TypeFor[*Backend]()
	for _, name := range f.statements() {
		rest := strings.TrimPrefix(name, "sql")
		named := false
		for i := range typ.NumMethod() {
			m := typ.Method(i).Name
			if after, ok := strings.CutPrefix(rest, m); ok && (after == "" || unicode.IsUpper(rune(after[0]))) {
				named = true
			}
		}
		if !named {
			t.Errorf("%s names no method of Backend", name)
		}
	}
}

// Every statement of sql.go is sent somewhere, read from its field (s.st.X) and never as the
// constant itself, and no SQL text is written outside sql.go.
func TestStatementsLiveInSQLGo(t *testing.T) {
	f := parseSQLFile(t)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	keyword := []string{"SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "SAVEPOINT", "RELEASE", "ROLLBACK"}
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
				if st, ok := n.X.(*ast.SelectorExpr); ok && st.Sel.Name == "st" {
					used["sql"+n.Sel.Name] = true
				}
			case *ast.Ident:
				if strings.HasPrefix(n.Name, "sql") && len(n.Name) > 3 && unicode.IsUpper(rune(n.Name[3])) {
					t.Errorf("%s: %s is read outside sql.go: send its field, s.st.%s", path, n.Name, n.Name[3:])
				}
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					s, _ := strconv.Unquote(n.Value)
					for _, k := range keyword {
						if strings.HasPrefix(strings.TrimSpace(s), k+" ") {
							t.Errorf("%s: SQL text outside sql.go: %.40q", path, s)
						}
					}
				}
			}
			return true
		})
	}
	for _, name := range f.statements() {
		if !used[name] {
			t.Errorf("%s is never sent (no s.st.%s outside tests)", name, name[3:])
		}
	}
}

// Every statement as the backend holds it (its field, the schema spliced in) is accepted by
// PostgreSQL against the migrated schema: each is prepared under its field's name, so a failure
// names the statement.
func TestEveryStatementPrepares(t *testing.T) {
	t.Parallel()
	pool := pgdbtest.Pool(t)
	schema := pgdbtest.Schema(t)
	ctx := t.Context()
	if _, err := New(ctx, pool, WithSchema(schema)); err != nil {
		t.Fatal(err)
	}
	var st statements
	if err := pgdb.ExpandByName(&st, statementTexts, schema); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	typ, v := reflect.TypeFor[statements](), reflect.ValueOf(st)
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if strings.HasPrefix(name, "CommitIn") {
			continue
		}
		if _, err := conn.Conn().Prepare(ctx, name, v.Field(i).String()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// CommitIn's savepoint statements run in a transaction, in the order CommitIn sends them
	// (PostgreSQL prepares only queries and DML).
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, sql := range []string{st.CommitInSavepoint, st.CommitInRollback, st.CommitInSavepoint, st.CommitInRelease} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Errorf("%.40q: %v", sql, err)
		}
	}
}
