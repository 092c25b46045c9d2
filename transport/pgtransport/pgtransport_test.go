package pgtransport_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/transport/transporttest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	transporttest.Run(t, func(t *testing.T, clock func() time.Time) *transport.Transport {
		return open(t, pgdbtest.Schema(t), pgtransport.WithClock(clock))
	})
}

// TestConformancePgBouncerMode runs the suite with every statement sent unprepared, as behind
// PgBouncer in transaction mode (and without the listener, which such a setup cannot have).
func TestConformancePgBouncerMode(t *testing.T) {
	t.Parallel()
	transporttest.Run(t, func(t *testing.T, clock func() time.Time) *transport.Transport {
		pool := newPool(t, pgdb.Config{MaxConns: 4, PgBouncer: true})
		return openOn(t, pool, pgdbtest.Schema(t), pgtransport.WithClock(clock), pgtransport.WithoutListen())
	})
}

func event(id string) stead.Event { return transporttest.Event(id) }

// TestTwoPoolsNeverShareAMessage runs claimers on two transports (two pools, as two hosts would)
// against one schema and checks that every message is delivered exactly once, in order per group,
// and never while another message of its group is in flight.
func TestTwoPoolsNeverShareAMessage(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.Schema(t)
	a, b := open(t, schema), open(t, schema)
	defer a.Close()
	defer b.Close()
	var claimers []transporttest.Claimer
	for w := range 8 {
		tr := a
		if w%2 == 1 {
			tr = b
		}
		claimers = append(claimers, transporttest.Claimer{T: tr, Max: 1 + w%3})
	}
	transporttest.Shared(t, 20, 10, claimers...)
}

// TestClaimInTransactionHoldsGroup checks the shared-transaction mode: a held claim made inside an
// open transaction keeps the group from every other claimer, even after the visibility ran out,
// until the transaction ends; a rollback leaves the message claimable, a commit with the ack
// removes it.
func TestClaimInTransactionHoldsGroup(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.Schema(t)
	clock := transporttest.NewClock(transporttest.Start)
	tr := open(t, schema, pgtransport.WithClock(clock.Now))
	defer tr.Close()
	other := open(t, schema, pgtransport.WithClock(clock.Now))
	defer other.Close()
	ctx := context.Background()
	if err := tr.Publish(ctx, "G", event("e1"), 0); err != nil {
		t.Fatal(err)
	}
	if err := tr.Publish(ctx, "G", event("e2"), 0); err != nil {
		t.Fatal(err)
	}

	for _, outcome := range []string{"rollback", "commit"} {
		tx, err := backendOf(tr).Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ls, err := claimHeld(backendOf(tr), ctx, tx, "w1", time.Second, 0, 10, nil)
		if err != nil || len(ls) != 1 || ls[0].Event.ID != "e1" {
			t.Fatalf("%s: claimHeld = %v, %v; want e1", outcome, ls, err)
		}
		clock.Advance(time.Minute) // the visibility is long over, but the transaction still holds the row
		if l, err := other.Claim(ctx, "w2", time.Second, 0); err != nil || l != nil {
			t.Fatalf("%s: Claim beside an open claim = %v, %v; want nothing", outcome, l, err)
		}
		if outcome == "rollback" {
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := backendOf(tr).PublishBatchTx(ctx, tx, []transport.Outgoing{{Group: "H", Event: event("h1")}}); err != nil {
			t.Fatalf("PublishBatchTx: %v", err)
		}
		if err := ackHeld(backendOf(tr), ctx, tx, ls); err != nil {
			t.Fatalf("ackHeld: %v", err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// After the rollback e1 was claimable again (the commit round claimed it); after the commit
	// it is gone, and the message published in the transaction is there.
	got := map[string]bool{}
	for _, id := range drain(t, other, "w3", time.Second) {
		got[id] = true
	}
	if !got["e2"] || !got["h1"] || got["e1"] || len(got) != 2 {
		t.Fatalf("after the commit: claimed %v, want e2 and h1", got)
	}
}

// claimForms are the two paths transport_claim takes: a single message (scalar statements) and a
// batch (set-based). Tests of claim behaviour run on both.
var claimForms = []struct {
	name  string
	claim func(ctx context.Context, tr *transport.Transport) (*transport.Lease, error)
}{
	{"single", func(ctx context.Context, tr *transport.Transport) (*transport.Lease, error) {
		return tr.Claim(ctx, "w", time.Minute, 0)
	}},
	{"batch", func(ctx context.Context, tr *transport.Transport) (*transport.Lease, error) {
		ls, err := tr.ClaimBatch(ctx, "w", time.Minute, 0, 2)
		if err != nil || len(ls) == 0 {
			return nil, err
		}
		if len(ls) > 1 {
			return nil, fmt.Errorf("claimed %d leases, want at most 1", len(ls))
		}
		return &ls[0], nil
	}},
}

// ackBesideOpenPublish publishes e1 to group G, claims it, opens a transaction that publishes e2
// to G, and acks e1 while that publish is still open: the ack finds the group held by the
// publisher and must free it rather than wait. It returns the open transaction.
func ackBesideOpenPublish(t *testing.T, tr *transport.Transport,
	claim func(context.Context, *transport.Transport) (*transport.Lease, error)) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	if err := tr.Publish(ctx, "G", event("e1"), 0); err != nil {
		t.Fatal(err)
	}
	l, err := claim(ctx, tr)
	if err != nil || l == nil {
		t.Fatalf("Claim = %v, %v", l, err)
	}
	tx, err := backendOf(tr).Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := backendOf(tr).PublishBatchTx(ctx, tx, []transport.Outgoing{{Group: "G", Event: event("e2")}}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Ack(ctx, l); err != nil {
		t.Fatalf("Ack beside an open publish: %v", err)
	}
	return tx
}

// TestEmptyGroupLeftByAbortedPublish covers the one way a group row can outlive its messages: an
// ack that finds a publisher holding the row frees it instead of waiting, and the publisher then
// rolls back. The next claim deletes the row and reports nothing.
func TestEmptyGroupLeftByAbortedPublish(t *testing.T) {
	t.Parallel()
	for _, form := range claimForms {
		t.Run(form.name, func(t *testing.T) {
			t.Parallel()
			schema := pgdbtest.Schema(t)
			tr := open(t, schema)
			defer tr.Close()
			ctx := context.Background()
			tx := ackBesideOpenPublish(t, tr, form.claim)
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if n := countRows(t, tr, "transport_groups"); n != 1 {
				t.Fatalf("%d group rows after the aborted publish, want the 1 left empty", n)
			}
			if l, err := form.claim(ctx, tr); err != nil || l != nil {
				t.Fatalf("Claim = %v, %v; want nothing", l, err)
			}
			if n := countRows(t, tr, "transport_groups"); n != 0 {
				t.Fatalf("%d group rows after the claim, want 0", n)
			}
			// The group works as new.
			if err := tr.Publish(ctx, "G", event("e3"), 0); err != nil {
				t.Fatal(err)
			}
			if l, err := form.claim(ctx, tr); err != nil || l == nil || l.Event.ID != "e3" {
				t.Fatalf("Claim = %v, %v; want e3", l, err)
			}
		})
	}
}

// TestEmptyGroupMetInTransactionKeepsPublishersFree checks that a held claim inside a caller's
// transaction that meets an empty group frees it rather than deleting it: a deletion would make a
// publish to the group from another transaction wait until the caller's transaction ends, and two
// such transactions publishing to each other's groups would deadlock.
func TestEmptyGroupMetInTransactionKeepsPublishersFree(t *testing.T) {
	t.Parallel()
	tr := open(t, pgdbtest.Schema(t))
	defer tr.Close()
	ctx := context.Background()
	if err := ackBesideOpenPublish(t, tr, claimForms[0].claim).Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	tx, err := backendOf(tr).Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // rolled back below
	if ls, err := claimHeld(backendOf(tr), ctx, tx, "w", time.Minute, 0, 1, nil); err != nil || len(ls) != 0 {
		t.Fatalf("claimHeld = %v, %v; want nothing (the group is empty)", ls, err)
	}
	if n := countRows(t, tr, "transport_groups"); n != 1 {
		t.Fatalf("%d group rows while the claiming transaction is open, want the empty one kept", n)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := tr.Publish(pctx, "G", event("e3"), 0); err != nil {
		t.Fatalf("Publish beside the open claim = %v, want it through at once", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if l, err := tr.Claim(ctx, "w", time.Minute, 0); err != nil || l == nil || l.Event.ID != "e3" {
		t.Fatalf("Claim = %v, %v; want e3", l, err)
	}
}

// TestPublishCommittedDuringAck checks the other side of the same race: when the publisher
// commits, its message is delivered, never stranded without a group row.
func TestPublishCommittedDuringAck(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.Schema(t)
	tr := open(t, schema)
	defer tr.Close()
	ctx := context.Background()
	tx := ackBesideOpenPublish(t, tr, claimForms[0].claim)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if l, err := tr.Claim(ctx, "w", time.Minute, 0); err != nil || l == nil || l.Event.ID != "e2" {
		t.Fatalf("Claim = %v, %v; want e2", l, err)
	}
}

// TestSharedTransactionsCrossPublishing runs steps that each claim a group, publish to other
// groups and ack, all in one transaction, concurrently: every message is delivered once, and no
// transaction fails (in that order, claim, publish, ack, no lock cycle can form).
func TestSharedTransactionsCrossPublishing(t *testing.T) {
	t.Parallel()
	crossPublish(t, func(ctx context.Context, b *pgtransport.Backend, tx pgx.Tx, worker string) ([]transport.Lease, error) {
		return claimHeld(b, ctx, tx, worker, time.Minute, 0, 2, nil)
	}, ackHeld)
}

func crossPublish(t *testing.T,
	claim func(ctx context.Context, b *pgtransport.Backend, tx pgx.Tx, worker string) ([]transport.Lease, error),
	ack func(b *pgtransport.Backend, ctx context.Context, tx pgx.Tx, ls []transport.Lease) error) {
	schema := pgdbtest.Schema(t)
	tr := openOn(t, newPool(t, pgdb.Config{MaxConns: 8}), schema)
	defer tr.Close()
	b := backendOf(tr)
	ctx := context.Background()
	const groups, hops = 6, 40
	var seed []transport.Outgoing
	for g := range groups {
		seed = append(seed, transport.Outgoing{Group: fmt.Sprintf("g%d", g), Event: event(fmt.Sprintf("seed-%d", g))})
	}
	if err := tr.PublishBatch(ctx, seed); err != nil {
		t.Fatal(err)
	}
	// Each delivered message publishes one to the next group until hops messages were sent.
	var (
		mu        sync.Mutex
		sent      = groups
		delivered = map[string]int{}
		ids       int
	)
	began := time.Now()
	g, gctx := errgroup(ctx)
	for w := range 4 {
		g.Go(func() error {
			for {
				mu.Lock()
				if len(delivered) >= hops+groups {
					mu.Unlock()
					return nil
				}
				mu.Unlock()
				if time.Since(began) > 20*time.Second {
					return fmt.Errorf("stuck: %d delivered, %d sent; groups %s; messages %s",
						len(delivered), sent, dump(tr, "transport_groups"), dump(tr, "transport_messages"))
				}
				var claimed []transport.Lease
				var out []transport.Outgoing
				err := pgx.BeginFunc(gctx, b.Pool(), func(tx pgx.Tx) error {
					claimed, out = nil, nil
					ls, err := claim(gctx, b, tx, fmt.Sprintf("w%d", w))
					if err != nil || len(ls) == 0 {
						return err
					}
					claimed = ls
					mu.Lock()
					for _, l := range ls {
						if sent+len(out) < hops+groups {
							next := fmt.Sprintf("g%d", (int(l.Group[1]-'0')+1)%groups)
							ids++ // never reused, even when the transaction fails
							out = append(out, transport.Outgoing{Group: next, Event: event(fmt.Sprintf("hop-%d", ids))})
						}
					}
					sent += len(out) // reserved; given back if the transaction fails
					mu.Unlock()
					if err := b.PublishBatchTx(gctx, tx, out); err != nil {
						return err
					}
					return ack(b, gctx, tx, ls)
				})
				mu.Lock()
				if err == nil {
					for _, l := range claimed {
						delivered[l.Event.ID]++
					}
				} else {
					sent -= len(out)
				}
				mu.Unlock()
				if err != nil {
					return err
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for id, n := range delivered {
		if n != 1 {
			t.Errorf("%s delivered %d times", id, n)
		}
	}
	if n := countRows(t, tr, "transport_messages"); n != 0 {
		t.Fatalf("%d messages left", n)
	}
}

// group runs goroutines and keeps the first error; its context ends at that error.
type group struct {
	wg     sync.WaitGroup
	once   sync.Once
	err    error
	cancel context.CancelFunc
}

func errgroup(ctx context.Context) (*group, context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	return &group{cancel: cancel}, ctx
}

func (g *group) Go(fn func() error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := fn(); err != nil {
			g.once.Do(func() { g.err = err; g.cancel() })
		}
	}()
}

func (g *group) Wait() error {
	g.wg.Wait()
	g.cancel()
	return g.err
}

// drain claims and acks as worker until nothing is claimable, and returns the event ids in the
// order they were claimed.
func drain(t *testing.T, tr *transport.Transport, worker string, visibility time.Duration) []string {
	t.Helper()
	var ids []string
	for {
		l, err := tr.Claim(context.Background(), worker, visibility, 0)
		if err != nil {
			t.Fatal(err)
		}
		if l == nil {
			return ids
		}
		ids = append(ids, l.Event.ID)
		if err := tr.Ack(context.Background(), l); err != nil {
			t.Fatal(err)
		}
	}
}

func countRows(t *testing.T, tr *transport.Transport, table string) int {
	t.Helper()
	var n int
	q := "SELECT count(*) FROM " + pgx.Identifier{backendOf(tr).Schema(), table}.Sanitize()
	if err := backendOf(tr).Pool().QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func dump(tr *transport.Transport, table string) string {
	rows, err := backendOf(tr).Pool().Query(context.Background(), "SELECT to_jsonb(t)::text FROM "+pgx.Identifier{backendOf(tr).Schema(), table}.Sanitize()+" t")
	if err != nil {
		return err.Error()
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err.Error()
	}
	return fmt.Sprint(out)
}

// TestQueueInTransaction sends a leased message's ack, a publish and a nack queued in pgx batches
// inside a transaction, the way worker/pgtx settles a lease it did not claim in that transaction.
func TestQueueInTransaction(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.Schema(t)
	tr := open(t, schema)
	defer tr.Close()
	ctx := context.Background()
	for _, id := range []string{"a1", "a2"} {
		if err := tr.Publish(ctx, "A", event(id), 0); err != nil {
			t.Fatal(err)
		}
	}
	inTx := func(queue func(b *pgx.Batch, l *transport.Lease) error) string {
		t.Helper()
		var id string
		err := pgx.BeginFunc(ctx, backendOf(tr).Pool(), func(tx pgx.Tx) error {
			ls, err := backendOf(tr).ClaimBatch(ctx, "w", time.Minute, 0, 1)
			if err != nil || len(ls) != 1 {
				return fmt.Errorf("claim: %d leases, %v", len(ls), err)
			}
			id = ls[0].Event.ID
			b := &pgx.Batch{}
			if err := queue(b, &ls[0]); err != nil {
				return err
			}
			return tx.SendBatch(ctx, b).Close()
		})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	// Nacked in the batch: the message comes back at once.
	if id := inTx(func(b *pgx.Batch, l *transport.Lease) error { return backendOf(tr).QueueNack(b, l, 0) }); id != "a1" {
		t.Fatalf("claimed %s, want a1", id)
	}
	// Acked with a publish beside it.
	id := inTx(func(b *pgx.Batch, l *transport.Lease) error {
		if err := backendOf(tr).QueuePublish(b, []transport.Outgoing{{Group: "B", Event: event("b1")}}); err != nil {
			return err
		}
		return backendOf(tr).QueueAck(b, []transport.Lease{*l})
	})
	if id != "a1" {
		t.Fatalf("claimed %s after the nack, want a1 again", id)
	}
	got := drain(t, tr, "w", time.Minute)
	slices.Sort(got)
	if want := []string{"a2", "b1"}; !slices.Equal(got, want) {
		t.Fatalf("left after the batches: %v, want %v", got, want)
	}
}

func TestQueueInvalid(t *testing.T) {
	t.Parallel()
	tr := open(t, pgdbtest.Schema(t))
	defer tr.Close()
	good := transport.Lease{Message: transport.Message{Seq: 1, Group: "G"}, Token: "w:1"}
	tests := []struct {
		name  string
		queue func(b *pgx.Batch) error
		want  error // nil: valid, nothing to do
	}{
		{"nil batch", func(*pgx.Batch) error { return backendOf(tr).QueueAck(nil, []transport.Lease{good}) }, stead.ErrInvalid},
		{"ack without token", func(b *pgx.Batch) error {
			return backendOf(tr).QueueAck(b, []transport.Lease{{Message: transport.Message{Seq: 1, Group: "G"}}})
		}, stead.ErrInvalid},
		{"publish to an empty group", func(b *pgx.Batch) error {
			return backendOf(tr).QueuePublish(b, []transport.Outgoing{{Event: event("e")}})
		}, stead.ErrInvalid},
		{"negative nack delay", func(b *pgx.Batch) error { return backendOf(tr).QueueNack(b, &good, -time.Second) }, stead.ErrInvalid},
		{"nothing to ack", func(b *pgx.Batch) error { return backendOf(tr).QueueAck(b, nil) }, nil},
		{"nothing to publish", func(b *pgx.Batch) error { return backendOf(tr).QueuePublish(b, nil) }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &pgx.Batch{}
			err := tc.queue(b)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("queue = %v, want %v", err, tc.want)
			}
			if b.Len() != 0 {
				t.Fatalf("queued %d statements", b.Len())
			}
		})
	}
}

// TestGroupsBehindCursorAreServed checks the bound the package doc gives: groups that go back
// behind the claimers' cursor (a nack hands a group back to the head of the round-robin; a shared
// transaction that claimed it rolls back) while other groups keep the claimers busy after the
// cursor are served at least one per rescanEvery (64) claims of the process, so k of them within
// 64·k. With one claimer the claims after the one from the head go on from the place it moved the
// cursor back to, so all k are served within 64+k; concurrent claimers of one process may move
// the cursor forward again in between.
func TestGroupsBehindCursorAreServed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		how      string
		k        int
		claimers int
		limit    int // claims of the process within which every group is served again
	}{
		{"nack", "nack", 1, 1, 64 + 1},
		{"rollback", "rollback", 1, 1, 64 + 1},
		{"three_nacks", "nack", 3, 1, 64 + 3},
		{"three_rollbacks", "rollback", 3, 1, 64 + 3},
		{"three_nacks_four_claimers", "nack", 3, 4, 64 * 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := open(t, pgdbtest.Schema(t))
			defer tr.Close()
			b := backendOf(tr)
			ctx := context.Background()
			var msgs []transport.Outgoing
			for g := range 300 {
				for i := range 2 {
					msgs = append(msgs, transport.Outgoing{Group: fmt.Sprintf("g%03d", g), Event: event(fmt.Sprintf("g%03d-%d", g, i))})
				}
			}
			if err := tr.PublishBatch(ctx, msgs); err != nil {
				t.Fatal(err)
			}
			claimAck := func() (string, error) {
				l, err := tr.Claim(ctx, "w", time.Minute, 0)
				if err != nil || l == nil {
					return "", fmt.Errorf("Claim = %v, %v", l, err)
				}
				return l.Event.ID, tr.Ack(ctx, l)
			}
			// Serve a few groups, then put the next k back behind the cursor.
			for range 5 {
				if _, err := claimAck(); err != nil {
					t.Fatal(err)
				}
			}
			back := map[string]bool{}
			for range tc.k {
				switch tc.how {
				case "nack":
					l, err := tr.Claim(ctx, "w", time.Minute, 0)
					if err != nil || l == nil {
						t.Fatalf("Claim = %v, %v", l, err)
					}
					back[l.Event.ID] = true
					if err := tr.Nack(ctx, l, 0); err != nil {
						t.Fatal(err)
					}
				case "rollback":
					tx, err := b.Pool().Begin(ctx)
					if err != nil {
						t.Fatal(err)
					}
					ls, err := claimHeld(b, ctx, tx, "w", time.Minute, 0, 1, nil)
					if err != nil || len(ls) != 1 {
						t.Fatalf("claimHeld = %v, %v", ls, err)
					}
					back[ls[0].Event.ID] = true
					if err := tx.Rollback(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			// Every claim below has more groups waiting after the cursor.
			var (
				mu     sync.Mutex
				claims int
				wg     sync.WaitGroup
				failed error
			)
			for range tc.claimers {
				wg.Go(func() {
					for {
						mu.Lock()
						if len(back) == 0 || claims >= tc.limit || failed != nil {
							mu.Unlock()
							return
						}
						claims++
						mu.Unlock()
						id, err := claimAck()
						mu.Lock()
						if err != nil && failed == nil {
							failed = err
						}
						if back[id] {
							delete(back, id)
							t.Logf("%s served again within %d claims", id, claims)
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if failed != nil {
				t.Fatal(failed)
			}
			if len(back) > 0 {
				t.Fatalf("%v not served again within %d claims", back, tc.limit)
			}
		})
	}
}

// TestConformanceThroughPgBouncer runs the suite through a real PgBouncer in transaction mode
// (test.sh starts one), with the pool in PgBouncer mode; schemas are made on the direct server.
func TestConformanceThroughPgBouncer(t *testing.T) {
	t.Parallel()
	url := pgdbtest.BouncerURL(t)
	transporttest.Run(t, func(t *testing.T, clock func() time.Time) *transport.Transport {
		pool, err := pgdb.Open(context.Background(), url, pgdb.Config{MaxConns: 4, PgBouncer: true, ConnectAttempts: 1})
		if err != nil {
			t.Fatalf("open a pool through PgBouncer: %v", err)
		}
		t.Cleanup(pool.Close)
		return openOn(t, pool, pgdbtest.Schema(t), pgtransport.WithClock(clock), pgtransport.WithoutListen())
	})
}
