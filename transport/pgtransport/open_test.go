package pgtransport_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/transport/transporttest"
)

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	pgdbtest.Pool(t) // skip (or fail under STEAD_REQUIRE_POSTGRES) without a server
	ctx := context.Background()
	tests := []struct {
		name string
		dsn  string
		opts []pgtransport.Option
		want error
	}{
		{"unsafe schema", pgdbtest.URL(), []pgtransport.Option{pgtransport.WithSchema(`x"; DROP TABLE y; --`)}, stead.ErrInvalid},
		{"reserved schema", pgdbtest.URL(), []pgtransport.Option{pgtransport.WithSchema("pg_catalog")}, stead.ErrInvalid},
		{"malformed URL", "postgres://%zz", nil, stead.ErrInvalid},
		{"unreachable server", "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=1",
			[]pgtransport.Option{pgtransport.WithConnectRetry(1, time.Millisecond)}, stead.ErrUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr, err := pgtransport.Open(ctx, tc.dsn, tc.opts...)
			if err == nil {
				tr.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestWithoutMigrate(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.Schema(t)
	ctx := context.Background()
	if tr, err := pgtransport.Open(ctx, pgdbtest.URL(), pgtransport.WithSchema(schema), pgtransport.WithoutMigrate()); err == nil {
		tr.Close()
		t.Fatal("Open without migrate on an empty schema succeeded")
	}
	tr := open(t, schema) // migrates
	tr.Close()
	tr, err := pgtransport.Open(ctx, pgdbtest.URL(), pgtransport.WithSchema(schema), pgtransport.WithoutMigrate())
	if err != nil {
		t.Fatalf("Open without migrate on a migrated schema: %v", err)
	}
	tr.Close()
}

// TestConcurrentMigrations opens many transports on one new schema at once: the advisory lock
// lets one migrate and the others find nothing to do.
func TestConcurrentMigrations(t *testing.T) {
	t.Parallel()
	pool := pgdbtest.Pool(t)
	schema := pgdbtest.NewName(t)
	t.Cleanup(func() { pgdbtest.Drop(t, pool, schema) })
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr, err := pgtransport.Open(context.Background(), pgdbtest.URL(), pgtransport.WithSchema(schema), pgtransport.WithMaxConns(2))
			if err == nil {
				err = tr.Publish(context.Background(), "G", transporttest.Event("e"), 0)
				tr.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestAcquireTimeout checks that a call that finds no free connection within the acquire timeout
// fails with ErrUnavailable, having sent nothing.
func TestAcquireTimeout(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.Schema(t)
	tr := open(t, schema, pgtransport.WithMaxConns(1), pgtransport.WithAcquireTimeout(50*time.Millisecond))
	defer tr.Close()
	ctx := context.Background()
	conn, err := tr.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Publish(ctx, "G", transporttest.Event("e"), 0)
	conn.Release()
	if !errors.Is(err, stead.ErrUnavailable) {
		t.Fatalf("Publish with the pool exhausted = %v, want ErrUnavailable", err)
	}
	if l, err := tr.Claim(ctx, "w", time.Minute, 0); err != nil || l != nil {
		t.Fatalf("Claim = %v, %v; want nothing (the publish sent nothing)", l, err)
	}
}

// TestNewOnSharedPool checks New on the application's pool: Close leaves the pool open.
func TestNewOnSharedPool(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.Schema(t)
	pool := pgdbtest.Pool(t)
	ctx := context.Background()
	tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Pool() != pool || tr.Schema() != schema {
		t.Fatal("Pool or Schema do not report what New was given")
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("the application's pool was closed by Close: %v", err)
	}
}
