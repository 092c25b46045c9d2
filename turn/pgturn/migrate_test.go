package pgturn_test

import (
	"context"
	"sync"
	"testing"

	"github.com/steadhq/stead/pgdb/pgdbtest"
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
	stores := make([]*pgturn.Store, starters)
	for i := range stores {
		s, err := pgturn.ConnectWith(ctx, pgdbtest.URL(), pgturn.Config{Schema: schema, MaxConns: 2})
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		stores[i] = s
	}
	start := make(chan struct{})
	errs := make([]error, starters)
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			<-start
			errs[i] = s.Migrate(ctx)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("migrate %d: %v", i, err)
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
	if len(versions) != 2 || versions[0] != 1 || versions[1] != 2 {
		t.Fatalf("recorded versions = %v, want [1 2]", versions)
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

	// Every later start-up migrates again, and finds nothing to do.
	for range 2 {
		if err := stores[0].Migrate(ctx); err != nil {
			t.Fatalf("migrate again: %v", err)
		}
	}
}

// The statements themselves are idempotent, not only the version table: applying them to a
// schema that already holds them (a version table lost in a restore, say) changes nothing.
func TestMigrationsReapplyCleanly(t *testing.T) {
	t.Parallel()
	pool := pgdbtest.Pool(t)
	schema := pgdbtest.Schema(t)
	ctx := context.Background()
	s, err := pgturn.FromPool(pool, pgturn.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DROP TABLE `+schema+`.turn_migrations`); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("re-applying every version: %v", err)
	}
}
