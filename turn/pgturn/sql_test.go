package pgturn

import (
	"go/ast"
	"go/parser"
	"go/token"
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
	texts map[string]string // every constant of sql.go
}

func parseSQLFile(t *testing.T) sqlFile {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "sql.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	exprs := map[string]ast.Expr{}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				exprs[name.Name] = vs.Values[i]
			}
		}
	}
	out := sqlFile{texts: map[string]string{}}
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

// Every statement of sql.go is sent somewhere, every sql... name the code uses is one of them, and
// no SQL text is written outside sql.go.
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
			case *ast.Ident:
				if _, ok := f.texts[n.Name]; ok || strings.HasPrefix(n.Name, "sql") && n.Name != "sql" {
					used[n.Name] = true
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
	for name := range used {
		if _, ok := f.texts[name]; !ok && strings.HasPrefix(name, "sql") {
			t.Errorf("%s is used but is no constant of sql.go", name)
		}
	}
	for _, name := range f.statements() {
		if !used[name] {
			t.Errorf("%s is never sent", name)
		}
	}
}

// Every statement, its schema spliced in, is accepted by PostgreSQL against the migrated schema:
// each is prepared under its own name, so a failure names the statement.
func TestEveryStatementPrepares(t *testing.T) {
	t.Parallel()
	pool := pgdbtest.Pool(t)
	schema := pgdbtest.Schema(t)
	ctx := t.Context()
	if _, err := New(ctx, pool, WithSchema(schema)); err != nil {
		t.Fatal(err)
	}
	f := parseSQLFile(t)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, name := range f.statements() {
		if strings.HasPrefix(name, "sqlCommitIn") {
			continue
		}
		if _, err := conn.Conn().Prepare(ctx, name, pgdb.Expand(f.texts[name], schema)); err != nil {
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
	for _, name := range []string{"sqlCommitInSavepoint", "sqlCommitInRollback", "sqlCommitInSavepoint", "sqlCommitInRelease"} {
		if _, err := tx.Exec(ctx, f.texts[name]); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
