package pgtransport_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
)

// TestPublishCreatesGroupsInIDOrder replays, step by step, the interleaving in which a publish
// creating several groups met a group that was created, drained and deleted under it, and
// re-created by a second publish: the first then had to create that group after one with a
// higher id, each waited for the other's creation, and PostgreSQL broke the cycle with a deadlock
// error (40P01). The publish must instead hold every group it appends to in one pass in id order.
//
// Publish A appends to g1, g2, g3, none of which it finds. It waits to create g1 for C, which
// creates it and commits, then creates g2 and waits to create g3 for E. Meanwhile g1's message is
// claimed and acked, which drains g1 (deleted unless A holds it), and publish B to g1 and g2
// creates g1 again if it was deleted, and waits to create g2 for A. E rolls back, and A goes on.
func TestPublishCreatesGroupsInIDOrder(t *testing.T) {
	t.Parallel()
	pool := quickDeadlockPool(t)
	tr := openOn(t, pool, pgdbtest.Schema(t), pgtransport.WithoutNotify())
	defer tr.Close()
	b := backendOf(tr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// A transaction on a connection of its own, and that connection's server process.
	type session struct {
		tx  pgx.Tx
		pid uint32
	}
	begin := func() session {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
		return session{tx, tx.Conn().PgConn().PID()}
	}
	outgoing := func(ids ...string) []transport.Outgoing { // each event to the group g<its digit>
		out := make([]transport.Outgoing, len(ids))
		for i, id := range ids {
			out[i] = transport.Outgoing{Group: "g" + id[1:], Event: event(id)}
		}
		return out
	}
	publish := func(s session, ids ...string) {
		t.Helper()
		if err := b.PublishBatchTx(ctx, s.tx, outgoing(ids...)); err != nil {
			t.Fatal(err)
		}
	}
	// publishAsync publishes and commits in the background: its publish is about to wait.
	publishAsync := func(s session, ids ...string) <-chan error {
		done := make(chan error, 1)
		go func() {
			err := b.PublishBatchTx(ctx, s.tx, outgoing(ids...))
			if err == nil {
				err = s.tx.Commit(ctx)
			}
			done <- err
		}()
		return done
	}
	// waitBlocked returns once holder's transaction keeps waiter's from going on.
	waitBlocked := func(waiter, holder session, what string, waiterDone <-chan error) {
		t.Helper()
		for {
			var blocked bool
			q := `SELECT $2::int = ANY (pg_blocking_pids($1::int))`
			if err := pool.QueryRow(ctx, q, int(waiter.pid), int(holder.pid)).Scan(&blocked); err != nil {
				t.Fatal(err)
			}
			if blocked {
				return
			}
			select {
			case err := <-waiterDone:
				t.Fatalf("%s ended (%v) instead of waiting", what, err)
			case <-ctx.Done():
				t.Fatalf("%s never waited", what)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}

	c, e, a, bb := begin(), begin(), begin(), begin()
	publish(c, "c1")
	publish(e, "e3")
	doneA := publishAsync(a, "a1", "a2", "a3")
	waitBlocked(a, c, "publish A creating g1", doneA)
	if err := c.tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitBlocked(a, e, "publish A creating g3", doneA)

	ls, err := tr.ClaimBatch(ctx, "w", time.Minute, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].Event.ID != "c1" {
		t.Fatalf("claimed %v, want c1 alone", ls)
	}
	if err := tr.AckBatch(ctx, ls); err != nil {
		t.Fatal(err)
	}

	doneB := publishAsync(bb, "b1", "b2")
	waitBlocked(bb, a, "publish B creating g2", doneB)
	if err := e.tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for name, done := range map[string]<-chan error{"A": doneA, "B": doneB} {
		if err := <-done; err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "40P01" && errors.Is(err, stead.ErrConflict) {
				t.Errorf("publish %s deadlocked (40P01, stead.ErrConflict): %v", name, err)
			} else {
				t.Errorf("publish %s: %v", name, err)
			}
		}
	}
	if t.Failed() {
		return
	}

	// Every message published once, in its group.
	got := map[string][]string{}
	for {
		ls, err := tr.ClaimBatch(ctx, "w", time.Minute, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 0 {
			break
		}
		for _, l := range ls {
			got[l.Group] = append(got[l.Group], l.Event.ID)
		}
		if err := tr.AckBatch(ctx, ls); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]string{"g1": {"a1", "b1"}, "g2": {"a2", "b2"}, "g3": {"a3"}}
	for g, ids := range want {
		slices.Sort(got[g])
		if !slices.Equal(got[g], ids) {
			t.Errorf("group %s delivered %v, want %v", g, got[g], ids)
		}
	}
	if len(got) != len(want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
}
