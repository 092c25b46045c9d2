package sqlitetransport

import (
	"context"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"reflect"
	"strings"
	"testing"

	"github.com/steadhq/stead/sqlitedb"
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
	if _, err := (&types.Config{}).Check("sqlitetransport", fset, []*ast.File{f}, info); err != nil {
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

// TestStatementsPairedByName checks that every statement of sql.go is in statements under its
// own name with its own text, that nothing else is, and that each fills a field of its own (the
// field named after it, which sqlitedb.PrepareByName fills) and prepares on the schema.
func TestStatementsPairedByName(t *testing.T) {
	consts := sqlConstants(t)
	for name, text := range statements {
		if c, ok := consts[name]; !ok {
			t.Errorf("%s is prepared but is no constant of sql.go", name)
		} else if c != text {
			t.Errorf("%s is prepared with another constant's text", name)
		}
	}
	for name := range consts {
		if _, ok := statements[name]; !ok {
			t.Errorf("%s of sql.go is never prepared", name)
		}
	}
	fields := map[string]bool{}
	for f := range reflect.TypeFor[stmts]().Fields() {
		fields["sql"+f.Name] = true
	}
	for name := range statements {
		if !fields[name] {
			t.Errorf("no field is prepared from %s", name)
		}
	}

	db, err := sqlitedb.Open(context.Background(), sqlitedb.Config{Path: sqlitedb.Memory})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := sqlitedb.Migrate(context.Background(), db, migrationsTable, migrations); err != nil {
		t.Fatal(err)
	}
	var s stmts
	if err := db.PrepareWrites(context.Background(), &s, statements); err != nil {
		t.Fatal(err)
	}
	defer db.ReleaseWrites(&s)
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		if f := v.Field(i); f.IsNil() {
			t.Errorf("field %s has no statement", v.Type().Field(i).Name)
		}
	}
}

// TestQueryPlans checks that the statements on the hot paths read the indexes meant for them:
// the claim walks only the claim order's partial indexes, which hold no waiting group, and the
// flow probes of unkeyed operations are one primary-key or partial-index search.
func TestQueryPlans(t *testing.T) {
	ctx := context.Background()
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: sqlitedb.Memory})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := sqlitedb.Migrate(ctx, db, migrationsTable, migrations); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, text, want string }{
		{"sqlClaimPick", sqlClaimPick, "USING INDEX transport_groups_claim_order"},
		{"sqlClaimPickPrioritised", sqlClaimPickPrioritised, "USING INDEX transport_groups_prioritised"},
		{"sqlPublishLimit", sqlPublishLimit, "SEARCH r USING PRIMARY KEY"},
		{"sqlFlowDue", sqlFlowDue, "USING COVERING INDEX transport_flow_keys_due"},
		{"sqlFlowWaiting", sqlFlowWaiting, "USING COVERING INDEX transport_groups_waiting (flow_key=?"},
		{"sqlFlowEnqueue", sqlFlowEnqueue, "USING COVERING INDEX transport_groups_waiting (flow_key=?"},
		{"sqlFlowCountWaiting", sqlFlowCountWaiting, "USING COVERING INDEX transport_groups_waiting (flow_key=?"},
	} {
		rows, err := db.W.QueryContext(ctx, "EXPLAIN QUERY PLAN "+tc.text, 1, 1, 1)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notUsed int
			var detail string
			if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(plan, "\n"), tc.want) {
			t.Errorf("%s: plan %q lacks %q", tc.name, plan, tc.want)
		}
	}
}
