package pgtransport

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/transporttest"
)

// TestAckHeldGroupsFreesEachGroupOnce checks the statement a held ack sends and what it reports:
// leases of distinct groups go to transport_ack_held as they are; several of one group to
// transport_ack_held_groups, which counts each group it freed once, and deletes the drained ones.
func TestAckHeldGroupsFreesEachGroupOnce(t *testing.T) {
	t.Parallel()
	// G: g1..g4, H: h1 h2, K: k1 k2. A claim of depth 3 takes g1-g3, h1 h2, k1 k2.
	published := []struct{ group, id string }{
		{"G", "g1"}, {"H", "h1"}, {"G", "g2"}, {"K", "k1"}, {"G", "g3"}, {"H", "h2"}, {"K", "k2"}, {"G", "g4"},
	}
	for _, c := range []struct {
		name    string
		ack     []string
		grouped bool   // sent to transport_ack_held_groups
		freed   int    // groups freed with messages left
		left    string // group rows after the commit
	}{
		{"heads of distinct groups", []string{"g1", "h1", "k1"}, false, 3, "G H K"},
		{"one group, a prefix", []string{"g1", "g2"}, true, 1, "G H K"},
		{"one group, all claimed", []string{"g1", "g2", "g3"}, true, 1, "G H K"},
		{"one group drained", []string{"h1", "h2"}, true, 0, "G K"},
		{"repeated groups, out of order", []string{"k1", "g2", "h2", "g1", "h1", "g3"}, true, 2, "G K"},
		{"every claimed", []string{"g1", "g2", "g3", "h1", "h2", "k1", "k2"}, true, 1, "G"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clock := transporttest.NewClock(transporttest.Start)
			tr, b := openInternal(t, pgdbtest.Schema(t), WithClock(clock.Now))
			defer tr.Close()
			ctx := context.Background()
			for _, m := range published {
				if err := tr.Publish(ctx, m.group, transporttest.Event(m.id), 0); err != nil {
					t.Fatal(err)
				}
			}
			tx, err := b.Pool().Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			ls, err := b.ClaimHeldGroupsTx(ctx, tx, "w", time.Minute, 0, 10, 3, nil)
			if err != nil || len(ls) != 7 {
				t.Fatalf("ClaimHeldGroupsTx = %v, %v; want 7 leases", ls, err)
			}
			var acked []transport.Lease
			for _, id := range c.ack {
				i := slices.IndexFunc(ls, func(l transport.Lease) bool { return l.Event.ID == id })
				acked = append(acked, ls[i])
			}
			sql, args := b.ackHeldStatement(acked)
			if grouped := sql == b.st.AckHeldGroups; grouped != c.grouped || !grouped && sql != b.st.AckHeld {
				t.Fatalf("ack sent %s", sql)
			}
			var freed int
			if err := tx.QueryRow(ctx, sql, args...).Scan(&freed); err != nil {
				t.Fatal(err)
			}
			if freed != c.freed {
				t.Fatalf("the ack freed %d groups; want %d", freed, c.freed)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			rows, err := b.Pool().Query(ctx, "SELECT group_id FROM "+pgx.Identifier{b.Schema(), "transport_groups"}.Sanitize()+" ORDER BY group_id")
			if err != nil {
				t.Fatal(err)
			}
			left, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(left, " "); got != c.left {
				t.Fatalf("groups after the ack = %q; want %q", got, c.left)
			}
		})
	}
}

// TestRepeatsGroup checks both ways of looking for a repeated group: the scan of small batches
// and the map of large ones.
func TestRepeatsGroup(t *testing.T) {
	t.Parallel()
	leases := func(n int, repeat bool) []transport.Lease {
		ls := make([]transport.Lease, n)
		for i := range ls {
			ls[i].Group = "G" + strings.Repeat("x", i)
		}
		if repeat {
			ls[n-1].Group = ls[(n-1)/2].Group
		}
		return ls
	}
	for _, n := range []int{2, 32, 33, 200} {
		for _, repeat := range []bool{false, true} {
			if got := repeatsGroup(leases(n, repeat)); got != repeat {
				t.Errorf("repeatsGroup of %d leases (repeat %v) = %v", n, repeat, got)
			}
		}
	}
	if repeatsGroup(nil) || repeatsGroup(leases(1, false)) {
		t.Error("repeatsGroup of fewer than two leases = true")
	}
}
