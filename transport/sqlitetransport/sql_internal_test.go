package sqlitetransport

import (
	"context"
	"database/sql"
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

// TestStatementsPairedByName checks that every statement of sql.go is prepared under its own name
// with its own text, that nothing else is, and that each fills a field of its own.
func TestStatementsPairedByName(t *testing.T) {
	consts := sqlConstants(t)
	var s stmts
	named := s.byName()
	seen := map[**sql.Stmt]string{}
	for name, st := range named {
		text, ok := consts[name]
		switch {
		case !ok:
			t.Errorf("%s is prepared but is no constant of sql.go", name)
		case st.text != text:
			t.Errorf("%s is prepared with another constant's text", name)
		}
		if other, dup := seen[st.dst]; dup {
			t.Errorf("%s and %s fill one field", name, other)
		}
		seen[st.dst] = name
	}
	for name := range consts {
		if _, ok := named[name]; !ok {
			t.Errorf("%s of sql.go is never prepared", name)
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
	conn, err := db.W.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := s.prepare(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		if f := v.Field(i); f.Type() == reflect.TypeFor[*sql.Stmt]() && f.IsNil() {
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
