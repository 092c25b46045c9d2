package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/storetest"
)

// bouncerPool returns a pool through the real PgBouncer of the test run (test.sh starts one in
// transaction mode), closed when the test ends.
func bouncerPool(t testing.TB, cfg pgdb.Config) *pgxpool.Pool {
	t.Helper()
	url := pgdbtest.BouncerURL(t)
	cfg.ConnectAttempts = 1
	pool, err := pgdb.Open(context.Background(), url, cfg)
	if err != nil {
		t.Fatalf("open a pool through PgBouncer: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestConformanceThroughPgBouncer runs the whole suite through a real PgBouncer in transaction
// mode, with the pool in PgBouncer mode.
func TestConformanceThroughPgBouncer(t *testing.T) {
	t.Parallel()
	pool := bouncerPool(t, pgdb.Config{PgBouncer: true, MaxConns: 8})
	storetest.Run(t, factory(func(*testing.T) *pgxpool.Pool { return pool }))
}

// TestThroughPgBouncerWithoutTheSetting checks that a pool that is not in PgBouncer mode fails
// behind PgBouncer with errors wrapping stead.ErrInvalid that name the setting, never with raw
// driver errors that match no sentinel.
func TestThroughPgBouncerWithoutTheSetting(t *testing.T) {
	t.Parallel()
	pool := bouncerPool(t, pgdb.Config{MaxConns: 4})
	s, err := newStoreOnErr(t, pool, pgdbtest.Pool(t))
	var errs []error
	if err != nil {
		errs = append(errs, err)
	} else {
		ctx := context.Background()
		if _, err := s.Save(ctx, &stead.Execution{ID: "x", DefinitionID: "d", Status: stead.StatusRunning}); err != nil {
			errs = append(errs, err)
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 25 {
					if _, err := s.Load(ctx, "x"); err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
	}
	if len(errs) == 0 {
		t.Fatal("named statements through PgBouncer never failed: the test did not reach the failure")
	}
	for _, err := range errs {
		if !errors.Is(err, stead.ErrInvalid) || !strings.Contains(err.Error(), "PgBouncer: true") {
			t.Errorf("%v: want ErrInvalid naming pgdb.Config{PgBouncer: true}", err)
		}
	}
}
