package doctor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/doctor"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/transport/pgtransport"
)

// TestStranded: of executions each held by one kind of row, only those with none are listed,
// and a pending one is certain.
func TestStranded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgdbtest.Pool(t)
	schema := pgdbtest.Schema(t)
	store, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema(schema), pgtransport.WithoutListen())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	q := pgdb.Qualifier(schema)
	old := time.Now().Add(-time.Hour)
	exe := func(id, status, parent string) {
		t.Helper()
		var p any
		if parent != "" {
			p = parent
		}
		if _, err := pool.Exec(ctx, `INSERT INTO `+q+`stead_executions
			(id, definition_id, status, parent_id, version, updated_at, data) VALUES ($1, 'flow', $2, $3, 1, $4, '{}')`,
			id, status, p, old); err != nil {
			t.Fatal(err)
		}
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	// Held by something: not listed.
	exe("queued", "running", "")
	if err := tr.Publish(ctx, "queued", stead.Event{ID: "e1", Kind: "go"}, 0); err != nil {
		t.Fatal(err)
	}
	exe("timer", "running", "")
	exec(`INSERT INTO ` + q + `stead_timers (execution_id, path, fire_at) VALUES ('timer', 'a', now())`)
	exe("targeted", "running", "")
	exec(`INSERT INTO ` + q + `stead_outbox (source_id, target_id, event) VALUES ('other', 'targeted', '{}')`)
	exe("emitting", "running", "")
	exec(`INSERT INTO ` + q + `stead_outbox (source_id, target_id, event) VALUES ('emitting', 'x', '{}')`)
	exe("spawning", "running", "")
	exec(`INSERT INTO ` + q + `stead_spawns (parent_id, child_id, root_path) VALUES ('spawning', 'spawning/c', 'r')`)
	exe("parent", "running", "")
	exe("parent/child", "suspended", "parent")
	exe("finished", "done", "")
	exe("suspended", "suspended", "")
	// Held by nothing: listed.
	exe("idle", "running", "")
	exe("lost-start", "pending", "")
	// Held by nothing but updated just now: not listed yet.
	exec(`INSERT INTO ` + q + `stead_executions (id, definition_id, status, version, updated_at, data)
		VALUES ('fresh', 'flow', 'running', 1, now(), '{}')`)

	got, err := doctor.Stranded(ctx, pool, doctor.Options{StoreSchema: schema, TransportSchema: schema})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"idle": false, "lost-start": true}
	if len(got) != len(want) {
		t.Fatalf("Stranded = %+v, want %v", got, want)
	}
	for _, f := range got {
		certain, ok := want[f.ID]
		if !ok || f.Certain != certain {
			t.Errorf("finding %+v: want listed %v, certain %v", f, ok, certain)
		}
	}

	if _, err := doctor.Stranded(ctx, pool, doctor.Options{StoreSchema: `x"y`}); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("an unsafe schema: %v, want ErrInvalid", err)
	}
}
