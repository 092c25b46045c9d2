package pgtransport_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/transport/transporttest"
)

// groupsRig is a schema whose messages a test publishes one by one, in the order given, through a
// transport whose backend claims held, beside another transport on the same schema and clock.
type groupsRig struct {
	heldRig
}

// newGroupsRig publishes ids in order; an id's group is its text up to the first digit ("g1" goes
// to G, "k10" to K).
func newGroupsRig(t *testing.T, ids ...string) *groupsRig {
	t.Helper()
	schema := pgdbtest.Schema(t)
	r := &groupsRig{heldRig{clock: transporttest.NewClock(transporttest.Start)}}
	r.tr = open(t, schema, pgtransport.WithClock(r.clock.Now))
	t.Cleanup(func() { _ = r.tr.Close() })
	r.other = open(t, schema, pgtransport.WithClock(r.clock.Now))
	t.Cleanup(func() { _ = r.other.Close() })
	r.b = backendOf(r.tr)
	for _, id := range ids {
		if err := r.tr.Publish(context.Background(), groupOf(id), event(id), 0); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func groupOf(id string) string {
	return strings.ToUpper(strings.TrimRightFunc(id, func(r rune) bool { return r >= '0' && r <= '9' }))
}

// claim is a held claim of depth in tx that fails the test on error.
func (r *groupsRig) claim(t *testing.T, tx pgx.Tx, max, depth int, held ...string) []transport.Lease {
	t.Helper()
	ls, err := r.b.ClaimHeldGroupsTx(context.Background(), tx, "w", time.Minute, 0, max, depth, held)
	if err != nil {
		t.Fatalf("ClaimHeldGroupsTx(max %d, depth %d, held %v): %v", max, depth, held, err)
	}
	return ls
}

// drainGroups claims what is left with ordinary one-message claims on the other transport.
func (r *groupsRig) drainGroups(t *testing.T) []string {
	t.Helper()
	return drain(t, r.other, "w9", time.Minute)
}

func ids(ls []transport.Lease) string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Event.ID
	}
	return strings.Join(out, " ")
}

// perGroup splits ids by group, keeping their order: what FIFO per group allows of a drain.
func perGroup(ids []string) map[string]string {
	out := map[string]string{}
	for _, id := range ids {
		g := groupOf(id)
		out[g] = strings.TrimSpace(out[g] + " " + id)
	}
	return out
}

// TestHeldGroupsClaim checks what a claim of several messages per group returns: up to depth
// consecutive messages of each group from its head, a group's adjacent and in order, the groups in
// the order of their heads, at most max in all, and no group locked that it does not return.
func TestHeldGroupsClaim(t *testing.T) {
	t.Parallel()
	// Interleaved, so that the seq order is not the group order.
	published := []string{"g1", "h1", "g2", "h2", "k1", "g3", "h3", "g4", "g5", "m1", "n1", "p1"}
	for _, c := range []struct {
		name       string
		max, depth int
		want       string
	}{
		{"all of every group", 20, 10, "g1 g2 g3 g4 g5 h1 h2 h3 k1 m1 n1 p1"},
		{"depth cuts each group", 20, 2, "g1 g2 h1 h2 k1 m1 n1 p1"},
		// ceil(5/3) = 2 groups, G and H, cut at 5: no third group is locked.
		{"max cuts the last group", 5, 3, "g1 g2 g3 h1 h2"},
		{"max leaves the last group its head", 4, 3, "g1 g2 g3 h1"},
		// ceil(7/3) = 3 groups give 3+3+1: full in one round.
		{"max across groups", 7, 3, "g1 g2 g3 h1 h2 h3 k1"},
		// Rounds: ceil(6/2) = 3 groups (G, H, K: 5), then ceil(1/2) = 1 (M: 6).
		{"rounds until full", 6, 2, "g1 g2 h1 h2 k1 m1"},
		{"depth of max", 3, 3, "g1 g2 g3"},
		{"one", 1, 5, "g1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newGroupsRig(t, published...)
			ctx := context.Background()
			tx := r.begin(t)
			ls := r.claim(t, tx, c.max, c.depth)
			if got := ids(ls); got != c.want {
				t.Fatalf("claim of max %d, depth %d = %s; want %s", c.max, c.depth, got, c.want)
			}
			token := ls[0].Token
			for _, l := range ls {
				if l.Token != token || !l.Until.Equal(r.clock.Now().Add(time.Minute)) || l.Group != groupOf(l.Event.ID) {
					t.Fatalf("lease %+v: want group %s, the claim's token, until a minute from now", l, groupOf(l.Event.ID))
				}
			}
			// Every other group is free for another claimer while the claim is open.
			claimed := map[string]bool{}
			for _, l := range ls {
				claimed[l.Group] = true
			}
			var free []string
			for _, id := range published {
				if g := groupOf(id); !claimed[g] && !slices.Contains(free, g) {
					free = append(free, g)
				}
			}
			others, err := r.other.ClaimBatch(ctx, "w2", time.Second, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range others {
				got = append(got, l.Group)
			}
			if !slices.Equal(got, free) {
				t.Fatalf("beside the open claim, another claimer took %v; want %v", got, free)
			}
		})
	}
}

// TestHeldGroupsSkipHeld checks that a claim skips the groups the transaction holds from earlier
// claims, and that a group it skips is not locked again by it.
func TestHeldGroupsSkipHeld(t *testing.T) {
	t.Parallel()
	r := newGroupsRig(t, "g1", "g2", "h1", "h2", "h3", "k1")
	tx := r.begin(t)
	if got := ids(r.claim(t, tx, 2, 2)); got != "g1 g2" {
		t.Fatalf("first claim = %s; want g1 g2", got)
	}
	if got := ids(r.claim(t, tx, 10, 2, "G")); got != "h1 h2 k1" {
		t.Fatalf("claim skipping G = %s; want h1 h2 k1", got)
	}
	if got := ids(r.claim(t, tx, 10, 5, "G", "H", "K")); got != "" {
		t.Fatalf("claim skipping every group = %s; want nothing", got)
	}
}

// TestHeldGroupsAckAndNack checks the acks and nacks of several leases of one group, in separate
// batches and in one: all of them or a prefix acked in one call, a nack of the lease after the prefix (at once
// or parked), leases left alone, with commit and rollback. What stays is queued in order and
// delivered next; the group is freed (or deleted) once.
func TestHeldGroupsAckAndNack(t *testing.T) {
	t.Parallel()
	type outcome struct {
		groups string // the group rows and whether each is free at the front (served_at NULL)
		parked bool   // G is held past the transaction
		drain  string // what ordinary claims get next, in order within each group
	}
	for _, c := range []struct {
		name  string
		ack   int // how many of G's 3 leases to ack, in one call
		nack  time.Duration
		doNak bool // nack the lease after the acked ones
		end   string
		want  outcome
	}{
		{"ack all", 3, 0, false, "commit", outcome{"G:back H:front", false, "g4 h1 g5"}},
		{"ack prefix", 2, 0, false, "commit", outcome{"G:back H:front", false, "h1 g3 g4 g5"}},
		{"ack prefix, nack next", 2, 0, true, "commit", outcome{"G:front H:front", false, "g3 g4 g5 h1"}},
		{"ack prefix, park next", 2, time.Minute, true, "commit", outcome{"G:parked H:front", true, "h1"}},
		{"nack head", 0, 0, true, "commit", outcome{"G:front H:front", false, "g1 g2 g3 g4 g5 h1"}},
		{"nothing", 0, 0, false, "commit", outcome{"G:front H:front", false, "g1 g2 g3 g4 g5 h1"}},
		{"ack all, rollback", 3, 0, false, "rollback", outcome{"G:front H:front", false, "g1 g2 g3 g4 g5 h1"}},
		{"ack prefix, park next, rollback", 2, time.Minute, true, "rollback", outcome{"G:front H:front", false, "g1 g2 g3 g4 g5 h1"}},
	} {
		for _, queued := range []bool{false, true} {
			name := c.name + "/separate batches"
			if queued {
				name = c.name + "/one batch"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				r := newGroupsRig(t, "g1", "g2", "g3", "g4", "g5", "h1")
				ctx := context.Background()
				tx := r.begin(t)
				ls := r.claim(t, tx, 3, 3)
				if got := ids(ls); got != "g1 g2 g3" {
					t.Fatalf("claim = %s; want g1 g2 g3", got)
				}
				b := &pgx.Batch{}
				if c.ack > 0 {
					if queued {
						err := r.b.QueueAckHeld(b, ls[:c.ack])
						if err != nil {
							t.Fatal(err)
						}
					} else if err := ackHeld(r.b, ctx, tx, ls[:c.ack]); err != nil {
						t.Fatalf("ackHeld: %v", err)
					}
				}
				if c.doNak {
					if queued {
						if err := r.b.QueueNackHeld(b, &ls[c.ack], c.nack); err != nil {
							t.Fatal(err)
						}
					} else if err := nackHeld(r.b, ctx, tx, &ls[c.ack], c.nack); err != nil {
						t.Fatalf("nackHeld: %v", err)
					}
				}
				if b.Len() > 0 {
					if err := tx.SendBatch(ctx, b).Close(); err != nil {
						t.Fatalf("batch: %v", err)
					}
				}
				var err error
				if c.end == "commit" {
					err = tx.Commit(ctx)
				} else {
					err = tx.Rollback(ctx)
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := r.groupStates(t); got != c.want.groups {
					t.Fatalf("groups = %s; want %s", got, c.want.groups)
				}
				got := r.drainGroups(t)
				if !maps.Equal(perGroup(got), perGroup(strings.Fields(c.want.drain))) {
					t.Fatalf("drained %v; want %s in order within each group", got, c.want.drain)
				}
				if c.want.parked {
					r.clock.Advance(time.Minute + time.Millisecond)
					if got := strings.Join(r.drainGroups(t), " "); got != "g3 g4 g5" {
						t.Fatalf("after the park, drained %s; want g3 g4 g5", got)
					}
				}
			})
		}
	}
}

// groupStates describes the group rows: each group's id and whether it is at the front of the
// round-robin (never served or handed back), at the back (served) or parked.
func (r *groupsRig) groupStates(t *testing.T) string {
	t.Helper()
	rows, err := r.b.Pool().Query(context.Background(), `SELECT group_id || ':' || CASE
		WHEN locked_by IS NOT NULL THEN 'parked' WHEN served_at IS NULL THEN 'front' ELSE 'back' END
		FROM `+pgx.Identifier{r.b.Schema(), "transport_groups"}.Sanitize()+` ORDER BY group_id`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}

// TestHeldGroupsAckDrains checks that acking every message of groups in one call deletes them,
// one group alone (the scalar path) and two together, beside a group that keeps messages.
func TestHeldGroupsAckDrains(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		published []string
		groups    string
	}{
		{"one group", []string{"g1", "g2"}, ""},
		{"two groups", []string{"g1", "h1", "g2", "h2"}, ""},
		{"beside one kept", []string{"g1", "h1", "g2", "h2", "h3"}, "H:back"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newGroupsRig(t, c.published...)
			ctx := context.Background()
			tx := r.begin(t)
			ls := r.claim(t, tx, 10, 2)
			if err := ackHeld(r.b, ctx, tx, ls); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if got := r.groupStates(t); got != c.groups {
				t.Fatalf("groups after the ack = %q; want %q", got, c.groups)
			}
			if n := countRows(t, r.tr, "transport_group_anchors"); n != strings.Count(c.groups, ":") {
				t.Fatalf("%d anchors after the ack; want one per group left", n)
			}
		})
	}
}

// TestHeldGroupsOrderAcrossLateCommit checks that a message published concurrently into a held
// group never comes back ahead of one published before it: a publish holding a lower number
// commits after a higher one, while the group is held, and everything is delivered in an order
// that keeps each publisher's own messages in order.
func TestHeldGroupsOrderAcrossLateCommit(t *testing.T) {
	t.Parallel()
	r := newGroupsRig(t, "g1")
	ctx := context.Background()
	// An open publish takes the lower number (g2); a later one (g3) commits first.
	slow, err := r.b.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Rollback(ctx)
	if err := r.b.PublishBatchTx(ctx, slow, []transport.Outgoing{{Group: "G", Event: event("g2")}}); err != nil {
		t.Fatal(err)
	}
	if err := r.tr.Publish(ctx, "G", event("g3"), 0); err != nil {
		t.Fatal(err)
	}
	tx := r.begin(t)
	if got := ids(r.claim(t, tx, 10, 10)); got != "g1 g3" {
		t.Fatalf("claim beside the open publish = %s; want g1 g3", got)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// Now g2 lands, and g4 after it: g2 and g4 are ordered, g2 and g3 were concurrent.
	if err := slow.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.tr.Publish(ctx, "G", event("g4"), 0); err != nil {
		t.Fatal(err)
	}
	tx = r.begin(t)
	ls := r.claim(t, tx, 2, 2)
	if got := ids(ls); got != "g1 g2" {
		t.Fatalf("claim = %s; want g1 g2", got)
	}
	if err := ackHeld(r.b, ctx, tx, ls); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.drainGroups(t), " "); got != "g3 g4" {
		t.Fatalf("drained %s; want g3 g4", got)
	}
}

// TestHeldGroupsInvalid checks that bad input is refused with ErrInvalid before anything is sent:
// the transaction stays usable and nothing was claimed.
func TestHeldGroupsInvalid(t *testing.T) {
	t.Parallel()
	r := newGroupsRig(t, "g1", "g2", "h1")
	ctx := context.Background()
	tx := r.begin(t)
	for _, c := range []struct {
		name       string
		worker     string
		max, depth int
		held       []string
	}{
		{"depth 0", "w", 10, 0, nil},
		{"negative depth", "w", 10, -1, nil},
		{"depth past the batch", "w", 10, transport.MaxBatch + 1, nil},
		{"max 0", "w", 0, 2, nil},
		{"max past the batch", "w", transport.MaxBatch + 1, 2, nil},
		{"empty worker", "", 10, 2, nil},
		{"empty held", "w", 10, 2, []string{""}},
	} {
		if _, err := r.b.ClaimHeldGroupsTx(ctx, tx, c.worker, time.Minute, 0, c.max, c.depth, c.held); !errors.Is(err, stead.ErrInvalid) {
			t.Errorf("%s: %v; want ErrInvalid", c.name, err)
		}
	}
	if got := ids(r.claim(t, tx, 10, 2)); got != "g1 g2 h1" {
		t.Fatalf("claim after the refusals = %s; want g1 g2 h1", got)
	}
	closed := newGroupsRig(t, "g1")
	if err := closed.tr.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := closed.b.ClaimHeldGroupsTx(ctx, closed.begin(t), "w", time.Minute, 0, 1, 2, nil); !errors.Is(err, stead.ErrClosed) {
		t.Fatalf("claim after Close: %v; want ErrClosed", err)
	}
}

// TestHeldGroupsConcurrent runs transactions claiming several messages per group at once while
// publishers publish into the same groups, and checks that every message is delivered once, and
// each publisher's messages of a group in the order it published them, when the claiming
// transactions ack what they claimed (or roll back, now and then).
func TestHeldGroupsConcurrent(t *testing.T) {
	t.Parallel()
	const (
		groups     = 8
		publishers = 3
		rounds     = 40 // batches per publisher
		claimers   = 4
	)
	schema := pgdbtest.Schema(t)
	tr := open(t, schema)
	defer tr.Close()
	b := backendOf(tr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g, ctx := errgroup(ctx)
	var published atomic.Int64
	var pubDone atomic.Int32
	// The claimers start once every publisher has a backlog out, so that groups hold several
	// messages to claim at once from the start.
	var backlog sync.WaitGroup
	backlog.Add(publishers)
	for p := range publishers {
		g.Go(func() error {
			var out sync.Once
			defer out.Do(backlog.Done)
			defer pubDone.Add(1)
			for i := range rounds {
				if i == rounds/4 {
					out.Do(backlog.Done)
				}
				// Three messages a round, to groups every publisher also publishes to, one
				// publish each: what races here is publishers within a group, not the
				// creation of several groups by one publish against another's.
				for k := range 3 {
					grp := fmt.Sprintf("G%d", (p+i+k*3)%groups)
					if err := tr.Publish(ctx, grp, event(fmt.Sprintf("%s/%d/%04d-%d", grp, p, i, k)), 0); err != nil {
						return err
					}
					published.Add(1)
				}
			}
			return nil
		})
	}
	var (
		mu    sync.Mutex
		got   = map[string][]string{} // group -> ids in delivery order
		n     int64
		multi int // claims that took more than one message of a group
	)
	for w := range claimers {
		g.Go(func() error {
			backlog.Wait()
			for try := 0; ; try++ {
				mu.Lock()
				done := pubDone.Load() == publishers && n == published.Load()
				mu.Unlock()
				if done {
					return nil
				}
				tx, err := b.Pool().Begin(ctx)
				if err != nil {
					return err
				}
				ls, err := b.ClaimHeldGroupsTx(ctx, tx, fmt.Sprintf("w%d", w), time.Minute, 0, 6, 1+(w+try)%4, nil)
				if err != nil {
					_ = tx.Rollback(ctx)
					return err
				}
				if len(ls) == 0 || try%7 == 3 {
					_ = tx.Rollback(ctx)
					if len(ls) == 0 {
						time.Sleep(time.Millisecond)
					}
					continue
				}
				if err := ackHeld(b, ctx, tx, ls); err != nil {
					_ = tx.Rollback(ctx)
					return err
				}
				// Recorded before the commit: no one else can claim these groups until it ends.
				mu.Lock()
				for i, l := range ls {
					got[l.Group] = append(got[l.Group], l.Event.ID)
					if i > 0 && ls[i-1].Group == l.Group {
						multi++
					}
				}
				n += int64(len(ls))
				mu.Unlock()
				if err := tx.Commit(ctx); err != nil {
					return err
				}
			}
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for grp, list := range got {
		last := map[string]string{} // publisher -> its last id delivered in grp
		for _, id := range list {
			if seen[id] {
				t.Fatalf("%s delivered twice", id)
			}
			seen[id] = true
			parts := strings.SplitN(id, "/", 3)
			if parts[0] != grp {
				t.Fatalf("%s delivered in group %s", id, grp)
			}
			if prev := last[parts[1]]; prev != "" && prev > parts[2] {
				t.Fatalf("group %s: publisher %s's %s delivered after its %s: %v", grp, parts[1], parts[2], prev, list)
			}
			last[parts[1]] = parts[2]
		}
	}
	if want := publishers * rounds * 3; len(seen) != want {
		t.Fatalf("%d messages delivered; want %d", len(seen), want)
	}
	if n := countRows(t, tr, "transport_messages"); n != 0 {
		t.Fatalf("%d messages left", n)
	}
	if multi == 0 {
		t.Fatal("no claim took more than one message of a group")
	}
	t.Logf("%d leases came after one of their group in the same claim", multi)
}
