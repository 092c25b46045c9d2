package pgtransport_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
)

// errRollback makes a step's transaction roll back on purpose, as a lost compare-and-swap does.
var errRollback = errors.New("rolled back on purpose")

// quickDeadlockPool returns a pool on the test server whose connections look for lock cycles
// after 20 ms instead of PostgreSQL's 1 s (deadlock_timeout) when the test's role may set that (a
// superuser), so that a run of seconds meets many more of them.
func quickDeadlockPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	var super bool
	q := `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`
	if err := pgdbtest.Pool(t).QueryRow(context.Background(), q).Scan(&super); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(pgdbtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 16
	if super {
		cfg.ConnConfig.RuntimeParams["deadlock_timeout"] = "20ms"
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestNoDeadlockUnderContention runs every kind of caller hard against one small set of groups
// for a few seconds: claimers that ack or nack in batches, publishers on their own and in
// transactions that stay open a moment, and steps that claim (with a lease, or held, several
// messages per group), publish to other groups and ack in one transaction (some rolling back).
// Any error fails the test: a deadlock or a serialization failure would surface as
// stead.ErrConflict.
func TestNoDeadlockUnderContention(t *testing.T) {
	t.Parallel()
	tr := openOn(t, quickDeadlockPool(t), pgdbtest.Schema(t), pgtransport.WithoutNotify())
	defer tr.Close()
	b := backendOf(tr)
	ctx, stop := context.WithTimeout(context.Background(), 4*time.Second)
	defer stop()

	const groups = 40
	anyGroup := func() string { return fmt.Sprintf("g%02d", rand.IntN(groups)) }
	var ids atomic.Int64
	outgoing := func(n int) []transport.Outgoing {
		out := make([]transport.Outgoing, n)
		for i := range out {
			out[i] = transport.Outgoing{Group: anyGroup(), Event: event(fmt.Sprintf("e%d", ids.Add(1)))}
		}
		return out
	}
	if err := tr.PublishBatch(ctx, outgoing(400)); err != nil {
		t.Fatal(err)
	}

	var (
		mu       sync.Mutex
		failures []error
		ops      [6]atomic.Int64 // per role, calls that succeeded
		wg       sync.WaitGroup
	)
	report := func(role int, err error) {
		switch {
		case err == nil:
			ops[role].Add(1)
		case ctx.Err() != nil: // the run is over; calls cut short by it are not failures
		default:
			mu.Lock()
			failures = append(failures, err)
			mu.Unlock()
		}
	}
	inTx := func(fn func(tx pgx.Tx) error) error {
		err := pgx.BeginFunc(ctx, b.Pool(), fn)
		if errors.Is(err, errRollback) {
			return nil
		}
		return err
	}
	roles := []struct {
		workers int
		run     func(w int) error
	}{
		{3, func(w int) error { // claim a batch and ack it, handing its first lease back at times
			ls, err := tr.ClaimBatch(ctx, fmt.Sprintf("claimer%d", w), time.Minute, 0, 8)
			if err != nil || len(ls) == 0 {
				return err
			}
			if rand.IntN(4) == 0 {
				if err := tr.Nack(ctx, &ls[0], 0); err != nil {
					return err
				}
				ls = ls[1:]
			}
			return tr.AckBatch(ctx, ls)
		}},
		{2, func(int) error { return tr.PublishBatch(ctx, outgoing(6)) }},
		{2, func(int) error { // publish in a transaction that stays open a moment
			return inTx(func(tx pgx.Tx) error {
				if err := b.PublishBatchTx(ctx, tx, outgoing(6)); err != nil {
					return err
				}
				time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
				return nil
			})
		}},
		{2, func(w int) error { // a step: claim, publish to other groups, ack, in one transaction
			return inTx(func(tx pgx.Tx) error {
				ls, err := claimHeld(b, ctx, tx, fmt.Sprintf("step%d", w), time.Minute, 0, 4, nil)
				if err != nil || len(ls) == 0 {
					return err
				}
				if err := b.PublishBatchTx(ctx, tx, outgoing(len(ls))); err != nil {
					return err
				}
				if err := ackHeld(b, ctx, tx, ls); err != nil {
					return err
				}
				if rand.IntN(10) == 0 {
					return errRollback
				}
				return nil
			})
		}},
		{2, func(w int) error { // a held step, several messages per group: worker/pgtx's order
			return inTx(func(tx pgx.Tx) error {
				depth := 1 + rand.IntN(3)
				ls, err := b.ClaimHeldGroupsTx(ctx, tx, fmt.Sprintf("held%d", w), time.Minute, 0, 6, depth, nil)
				if err != nil || len(ls) == 0 {
					return err
				}
				if err := b.PublishBatchTx(ctx, tx, outgoing(len(ls))); err != nil {
					return err
				}
				if err := ackHeld(b, ctx, tx, ls); err != nil {
					return err
				}
				if rand.IntN(10) == 0 {
					return errRollback
				}
				return nil
			})
		}},
		{1, func(w int) error { // a single-message step, the unbatched worker's
			return inTx(func(tx pgx.Tx) error {
				ls, err := claimHeld(b, ctx, tx, fmt.Sprintf("single%d", w), time.Minute, 0, 1, nil)
				if err != nil || len(ls) == 0 {
					return err
				}
				if err := b.PublishBatchTx(ctx, tx, outgoing(1)); err != nil {
					return err
				}
				return ackHeld(b, ctx, tx, ls)
			})
		}},
	}
	for role, r := range roles {
		for w := range r.workers {
			wg.Go(func() {
				for ctx.Err() == nil {
					report(role, r.run(w))
				}
			})
		}
	}
	wg.Wait()
	for _, err := range failures[:min(len(failures), 5)] {
		t.Error(err)
	}
	if len(failures) > 0 {
		t.Fatalf("%d calls failed", len(failures))
	}
	for role := range roles {
		if ops[role].Load() == 0 {
			t.Errorf("role %d made no call that succeeded", role)
		}
	}
	calls := make([]int64, len(roles))
	for role := range roles {
		calls[role] = ops[role].Load()
	}
	t.Logf("calls per role: %v", calls)
}
