package pgturn_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/pgturn"
)

// Eight processes starting at once against a database nobody has migrated yet: every one of them
// must succeed, and the schema must come out exactly once.
func TestMigrateConcurrentlyOnFreshSchema(t *testing.T) {
	t.Parallel()
	admin := pgdbtest.Pool(t)
	schema := pgdbtest.NewName(t)
	t.Cleanup(func() { pgdbtest.Drop(t, admin, schema) })
	ctx := context.Background()

	const starters = 8
	start := make(chan struct{})
	errs := make([]error, starters)
	var wg sync.WaitGroup
	for i := range starters {
		pool := openPool(t, pgdbtest.URL(), pgdb.Config{MaxConns: 2})
		wg.Go(func() {
			<-start
			_, errs[i] = pgturn.New(ctx, pool, pgturn.WithSchema(schema))
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("start-up %d: %v", i, err)
		}
	}

	var versions []int32
	rows, err := admin.Query(ctx, `SELECT version FROM `+schema+`.turn_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v int32
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []int32{1}; !slices.Equal(versions, want) {
		t.Fatalf("recorded versions = %v, want %v", versions, want)
	}
	var tables, checks int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename <> 'turn_migrations'`, schema).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 8 {
		t.Errorf("tables = %d, want 8", tables)
	}
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_constraint WHERE conname = 'turn_events_redaction_complete' AND connamespace = $1::regnamespace`, schema).Scan(&checks); err != nil {
		t.Fatal(err)
	}
	if checks != 1 {
		t.Errorf("redaction constraints = %d, want 1", checks)
	}

	// Every later start-up migrates again, and finds nothing to do; one that does not migrate
	// finds the schema at its version.
	for _, opts := range [][]pgturn.Option{{pgturn.WithSchema(schema)}, {pgturn.WithSchema(schema), pgturn.WithoutMigrate()}} {
		if _, err := pgturn.New(ctx, admin, opts...); err != nil {
			t.Fatalf("start again: %v", err)
		}
	}
}

// The statements themselves are idempotent, not only the version table: applying them to a
// schema that already holds them (a version table lost in a restore, say) changes nothing.
func TestMigrationsReapplyCleanly(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	if _, err := s.pool.Exec(ctx, `DROP TABLE `+s.schema+`.turn_migrations`); err != nil {
		t.Fatal(err)
	}
	if _, err := pgturn.New(ctx, s.pool, pgturn.WithSchema(s.schema)); err != nil {
		t.Fatalf("re-applying every version: %v", err)
	}
	if err := s.Conversations.CreateConversation(ctx, turn.Conversation{ID: turn.NewID(), AccountID: "acct", CreatedAt: at(0)}); err != nil {
		t.Fatalf("a write after re-applying: %v", err)
	}
}
