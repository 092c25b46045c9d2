package pgtransport_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/transport/transporttest"
)

// heldBackend is a transport.Backend that claims the way worker/pgtx does: each ClaimBatch is a
// held claim (one message per group) in a transaction of its own, which the ack or nack of its
// leases commits (a claim that found nothing rolls back). Leases of one claim must be settled
// together, as RaceFlow does. It lets the flow rules run through the held path.
type heldBackend struct {
	b   *pgtransport.Backend
	mu  sync.Mutex
	txs map[string]pgx.Tx // token -> the transaction holding its claim
}

var (
	_ transport.Backend = (*heldBackend)(nil)
	_ transport.Limiter = (*heldBackend)(nil)
)

// heldTransport returns a Transport that claims held through b.
func heldTransport(b *pgtransport.Backend) *transport.Transport {
	return transport.New(&heldBackend{b: b, txs: map[string]pgx.Tx{}})
}

func (h *heldBackend) PublishBatch(ctx context.Context, msgs []transport.Outgoing) error {
	return h.b.PublishBatch(ctx, msgs)
}

func (h *heldBackend) ClaimBatch(ctx context.Context, worker string, visibility time.Duration, minPriority, max int) ([]transport.Lease, error) {
	tx, err := h.b.Pool().Begin(ctx)
	if err != nil {
		return nil, err
	}
	ls, err := h.b.ClaimHeldGroupsTx(ctx, tx, worker, visibility, minPriority, max, 1, nil)
	if err != nil || len(ls) == 0 {
		_ = tx.Rollback(ctx)
		return ls, err
	}
	h.mu.Lock()
	h.txs[ls[0].Token] = tx
	h.mu.Unlock()
	return ls, nil
}

func (h *heldBackend) take(token string) pgx.Tx {
	h.mu.Lock()
	defer h.mu.Unlock()
	tx := h.txs[token]
	delete(h.txs, token)
	return tx
}

func (h *heldBackend) settle(ctx context.Context, token string, queue func(q *pgx.Batch) error) error {
	tx := h.take(token)
	if tx == nil {
		return fmt.Errorf("no open claim for token %s", token)
	}
	q := &pgx.Batch{}
	if err := queue(q); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	if err := send(ctx, tx, q); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

func (h *heldBackend) AckBatch(ctx context.Context, ls []transport.Lease) error {
	return h.settle(ctx, ls[0].Token, func(q *pgx.Batch) error { return h.b.QueueAckHeld(q, ls) })
}

func (h *heldBackend) Nack(ctx context.Context, l *transport.Lease, delay time.Duration) error {
	return h.settle(ctx, l.Token, func(q *pgx.Batch) error { return h.b.QueueNackHeld(q, l, delay) })
}

func (h *heldBackend) Wait(ctx context.Context) error { return h.b.Wait(ctx) }

// Close rolls back the claims still open.
func (h *heldBackend) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for token, tx := range h.txs {
		_ = tx.Rollback(context.Background())
		delete(h.txs, token)
	}
	return nil
}

func (h *heldBackend) Forget(ctx context.Context, groups []string) error {
	return h.b.Forget(ctx, groups)
}

func (h *heldBackend) FlowState(ctx context.Context, key string) (transport.FlowState, error) {
	return h.b.FlowState(ctx, key)
}

// flowRig is a schema with a leased transport and a held one on their own pools, sharing a
// clock.
type flowRig struct {
	clock        *transporttest.Clock
	leased, held *transport.Transport
	b            *pgtransport.Backend // the held transport's
}

func newFlowRig(t *testing.T) *flowRig {
	t.Helper()
	schema := pgdbtest.Schema(t)
	r := &flowRig{clock: transporttest.NewClock(transporttest.Start)}
	r.leased = open(t, schema, pgtransport.WithClock(r.clock.Now))
	t.Cleanup(func() { _ = r.leased.Close() })
	pg := open(t, schema, pgtransport.WithClock(r.clock.Now))
	t.Cleanup(func() { _ = pg.Close() })
	r.b = backendOf(pg)
	r.held = heldTransport(r.b)
	t.Cleanup(func() { _ = r.held.Close() })
	return r
}

func publishFlow(t *testing.T, tr *transport.Transport, group, id string, fl transport.Flow) {
	t.Helper()
	if err := tr.PublishBatch(context.Background(), []transport.Outgoing{{Group: group, Event: event(id), Flow: fl}}); err != nil {
		t.Fatalf("Publish(%s, %s): %v", group, id, err)
	}
}

// claimIDs claims up to max through tr and requires exactly want, in any order.
func claimIDs(t *testing.T, tr *transport.Transport, max int, want ...string) []transport.Lease {
	t.Helper()
	ls, err := tr.ClaimBatch(context.Background(), "w", time.Minute, 0, max)
	if err != nil {
		t.Fatalf("ClaimBatch: %v", err)
	}
	got := make([]string, len(ls))
	for i := range ls {
		got[i] = ls[i].Event.ID
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("ClaimBatch(%d) = %v, want %v", max, got, want)
	}
	return ls
}

func ackAll(t *testing.T, tr *transport.Transport, ls []transport.Lease) {
	t.Helper()
	if len(ls) == 0 {
		return
	}
	if err := tr.AckBatch(context.Background(), ls); err != nil {
		t.Fatalf("AckBatch: %v", err)
	}
}

func flowState(t *testing.T, tr *transport.Transport, key string, admitted, waiting int) {
	t.Helper()
	st, err := tr.FlowState(context.Background(), key)
	if err != nil {
		t.Fatalf("FlowState(%s): %v", key, err)
	}
	if st.Admitted != admitted || st.Waiting != waiting {
		t.Fatalf("FlowState(%s) = %d admitted, %d waiting; want %d, %d", key, st.Admitted, st.Waiting, admitted, waiting)
	}
}

// TestFlowTwoPoolsNeverOverAdmit races claimers of two transports on their own pools, as two
// processes would, over groups of a few keys: admission is exact across them.
func TestFlowTwoPoolsNeverOverAdmit(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.Schema(t)
	a, b := open(t, schema), open(t, schema)
	defer a.Close()
	defer b.Close()
	const limit = 2
	total := publishRace(t, a, limit)
	transporttest.RaceFlow(t, limit, total,
		transporttest.Claimer{T: a, Max: 4}, transporttest.Claimer{T: b, Max: 1},
		transporttest.Claimer{T: a, Max: 1}, transporttest.Claimer{T: b, Max: 8})
	flowState(t, a, "k0", 0, 0)
}

// publishRace publishes what RaceFlow expects, three keys of eight groups of three messages, in
// one batch, and returns how many.
func publishRace(t *testing.T, tr *transport.Transport, limit int) int {
	t.Helper()
	const keys, groupsPerKey, perGroup = 3, 8, 3
	var msgs []transport.Outgoing
	for i := range perGroup {
		for k := range keys {
			for g := range groupsPerKey {
				grp := fmt.Sprintf("k%d-g%d", k, g)
				msgs = append(msgs, transport.Outgoing{Group: grp, Event: event(fmt.Sprintf("%s-%d", grp, i)),
					Flow: transport.Flow{Key: fmt.Sprintf("k%d", k), Concurrency: limit}})
			}
		}
	}
	if err := tr.PublishBatch(context.Background(), msgs); err != nil {
		t.Fatalf("PublishBatch: %v", err)
	}
	return len(msgs)
}

// TestFlowHeldAndLeasedRace races held claimers (each claim a transaction that its ack commits,
// as worker/pgtx's) and leased claimers on one schema and two pools.
func TestFlowHeldAndLeasedRace(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.Schema(t)
	a, b := open(t, schema), open(t, schema)
	defer a.Close()
	defer b.Close()
	held := heldTransport(backendOf(b))
	defer held.Close()
	const limit = 2
	total := publishRace(t, a, limit)
	transporttest.RaceFlow(t, limit, total,
		transporttest.Claimer{T: held, Max: 4}, transporttest.Claimer{T: held, Max: 1},
		transporttest.Claimer{T: a, Max: 2}, transporttest.Claimer{T: held, Max: 8})
	flowState(t, a, "k1", 0, 0)
}

// TestFlowHeld runs the flow rules through the held claim and its acks: concurrency, an ack that
// requeues a group behind its key, forget, and claims of several messages per group.
func TestFlowHeld(t *testing.T) {
	t.Parallel()
	fl := transport.Flow{Key: "k", Concurrency: 2}
	t.Run("concurrency", func(t *testing.T) {
		t.Parallel()
		r := newFlowRig(t)
		for i := 1; i <= 5; i++ {
			publishFlow(t, r.leased, fmt.Sprintf("g%d", i), fmt.Sprintf("e%d", i), fl)
		}
		ls := claimIDs(t, r.held, 10, "e1", "e2")
		claimIDs(t, r.held, 10)
		claimIDs(t, r.leased, 10)
		ackAll(t, r.held, ls)
		flowState(t, r.held, "k", 2, 1)
		ls = claimIDs(t, r.held, 10, "e3", "e4")
		ackAll(t, r.held, ls)
		ackAll(t, r.leased, claimIDs(t, r.leased, 10, "e5"))
		flowState(t, r.held, "k", 0, 0)
	})
	t.Run("ack_requeues", func(t *testing.T) {
		t.Parallel()
		r := newFlowRig(t)
		one := transport.Flow{Key: "k", Concurrency: 1}
		publishFlow(t, r.leased, "G", "g1", one)
		publishFlow(t, r.leased, "G", "g2", one)
		publishFlow(t, r.leased, "H", "h1", one)
		ackAll(t, r.held, claimIDs(t, r.held, 10, "g1")) // G still has g2: it queues behind H
		flowState(t, r.held, "k", 1, 1)
		ackAll(t, r.held, claimIDs(t, r.held, 10, "h1"))
		ackAll(t, r.held, claimIDs(t, r.held, 10, "g2"))
		claimIDs(t, r.held, 10)
		flowState(t, r.held, "k", 0, 0)
	})
	t.Run("nack_keeps_the_place", func(t *testing.T) {
		t.Parallel()
		r := newFlowRig(t)
		one := transport.Flow{Key: "k", Concurrency: 1}
		publishFlow(t, r.leased, "G", "g1", one)
		publishFlow(t, r.leased, "H", "h1", one)
		ls := claimIDs(t, r.held, 10, "g1")
		if err := r.held.Nack(context.Background(), &ls[0], 0); err != nil {
			t.Fatal(err)
		}
		ls = claimIDs(t, r.leased, 10, "g1")
		ackAll(t, r.leased, ls)
		claimIDs(t, r.held, 10, "h1")
	})
	t.Run("forget", func(t *testing.T) {
		t.Parallel()
		r := newFlowRig(t)
		one := transport.Flow{Key: "k", Concurrency: 1}
		publishFlow(t, r.leased, "G", "g1", one)
		publishFlow(t, r.leased, "H", "h1", one)
		g := claimIDs(t, r.held, 10, "g1")
		if err := r.held.Forget(context.Background(), []string{"H"}); err != nil {
			t.Fatal(err)
		}
		h := claimIDs(t, r.held, 10, "h1")
		ackAll(t, r.held, h)
		flowState(t, r.held, "k", 1, 0)
		publishFlow(t, r.leased, "J", "j1", one)
		flowState(t, r.held, "k", 1, 1)
		ackAll(t, r.held, g) // G gone: J admitted
		claimIDs(t, r.held, 10, "j1")
	})
	t.Run("several_messages_per_group", func(t *testing.T) {
		t.Parallel()
		r := newFlowRig(t)
		one := transport.Flow{Key: "k", Concurrency: 1}
		for _, id := range []string{"g1", "g2", "g3", "h1", "h2"} {
			publishFlow(t, r.leased, groupOf(id), id, one)
		}
		ctx := context.Background()
		// Two of G's three: the ack ends G's admission with g3 left, and H goes first.
		tx := beginOn(t, r.b)
		ls, err := r.b.ClaimHeldGroupsTx(ctx, tx, "w", time.Minute, 0, 10, 2, nil)
		if err != nil || ids(ls) != "g1 g2" {
			t.Fatalf("deep claim = %s, %v; want g1 g2", ids(ls), err)
		}
		if err := ackHeld(r.b, ctx, tx, ls); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		flowState(t, r.leased, "k", 1, 1)
		tx = beginOn(t, r.b)
		ls, err = r.b.ClaimHeldGroupsTx(ctx, tx, "w", time.Minute, 0, 10, 5, nil)
		if err != nil || ids(ls) != "h1 h2" {
			t.Fatalf("deep claim = %s, %v; want h1 h2", ids(ls), err)
		}
		if err := ackHeld(r.b, ctx, tx, ls); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		ackAll(t, r.held, claimIDs(t, r.held, 10, "g3"))
		flowState(t, r.leased, "k", 0, 0)
		if n := countRows(t, r.leased, "transport_groups"); n != 0 {
			t.Fatalf("%d groups left", n)
		}
	})
	t.Run("rate", func(t *testing.T) {
		t.Parallel()
		r := newFlowRig(t)
		rate := transport.Flow{Key: "k", Rate: 1, Per: time.Second}
		for i := 1; i <= 3; i++ {
			publishFlow(t, r.leased, fmt.Sprintf("g%d", i), fmt.Sprintf("e%d", i), rate)
		}
		ackAll(t, r.held, claimIDs(t, r.held, 10, "e1"))
		claimIDs(t, r.held, 10)
		r.clock.Advance(time.Second + time.Millisecond) // due: the held claim admits
		ackAll(t, r.held, claimIDs(t, r.held, 10, "e2"))
		r.clock.Advance(time.Second + time.Millisecond)
		ackAll(t, r.held, claimIDs(t, r.held, 10, "e3"))
		flowState(t, r.held, "k", 0, 0)
	})
}

func beginOn(t *testing.T, b *pgtransport.Backend) pgx.Tx {
	t.Helper()
	tx, err := b.Pool().Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// TestFlowDeadHolder checks that a dead claimer's place is taken over, not lost: a group admitted
// and claimed by a claimer that then vanishes (a short lease never acked, or a held claim whose
// transaction dies) keeps its place; after the lease ends (or the transaction, at once) another
// claimer takes the group, the key's other groups wait meanwhile, and the ack of the group admits
// the next.
func TestFlowDeadHolder(t *testing.T) {
	t.Parallel()
	one := transport.Flow{Key: "k", Concurrency: 1}
	t.Run("lease", func(t *testing.T) {
		t.Parallel()
		r := newFlowRig(t)
		publishFlow(t, r.leased, "G", "g1", one)
		publishFlow(t, r.leased, "H", "h1", one)
		schema := backendOf(r.leased).Schema()
		dead := open(t, schema, pgtransport.WithClock(r.clock.Now))
		if ls, err := dead.ClaimBatch(context.Background(), "dead", 5*time.Second, 0, 10); err != nil || ids(ls) != "g1" {
			t.Fatalf("dead claimer's claim = %s, %v; want g1", ids(ls), err)
		}
		if err := dead.Close(); err != nil { // the claimer is gone, its lease left behind
			t.Fatal(err)
		}
		claimIDs(t, r.leased, 10)
		r.clock.Advance(4 * time.Second)
		claimIDs(t, r.leased, 10)
		flowState(t, r.leased, "k", 1, 1)
		r.clock.Advance(2 * time.Second)
		g := claimIDs(t, r.leased, 10, "g1") // G's place, taken over
		claimIDs(t, r.held, 10)
		ackAll(t, r.leased, g)
		ackAll(t, r.held, claimIDs(t, r.held, 10, "h1"))
		flowState(t, r.leased, "k", 0, 0)
	})
	t.Run("held", func(t *testing.T) {
		t.Parallel()
		r := newFlowRig(t)
		publishFlow(t, r.leased, "G", "g1", one)
		publishFlow(t, r.leased, "H", "h1", one)
		ctx := context.Background()
		tx := beginOn(t, r.b)
		ls, err := r.b.ClaimHeldGroupsTx(ctx, tx, "dead", time.Minute, 0, 10, 1, nil)
		if err != nil || ids(ls) != "g1" {
			t.Fatalf("held claim = %s, %v; want g1", ids(ls), err)
		}
		claimIDs(t, r.leased, 10)
		// The holder's session dies with its transaction open.
		var ok bool
		if err := backendOf(r.leased).Pool().QueryRow(ctx, "SELECT pg_terminate_backend($1, 10000)",
			tx.Conn().PgConn().PID()).Scan(&ok); err != nil || !ok {
			t.Fatalf("pg_terminate_backend = %v, %v", ok, err)
		}
		g := claimIDs(t, r.leased, 10, "g1")
		claimIDs(t, r.leased, 10)
		ackAll(t, r.leased, g)
		claimIDs(t, r.leased, 10, "h1")
	})
}

// TestFlowBusyKeyAdmitsAtNextClaim checks that an admission is not lost when the key's row is held
// by another transaction (an admission inside a caller's transaction keeps it until that ends):
// the ack that ends an admission meanwhile leaves the key due, and the first claim after the
// holder is gone admits.
func TestFlowBusyKeyAdmitsAtNextClaim(t *testing.T) {
	t.Parallel()
	r := newFlowRig(t)
	ctx := context.Background()
	one := transport.Flow{Key: "k", Concurrency: 1}
	publishFlow(t, r.leased, "G", "g1", one)
	publishFlow(t, r.leased, "H", "h1", one)
	g := claimIDs(t, r.leased, 10, "g1")
	holder := beginOn(t, r.b)
	if _, err := holder.Exec(ctx, "SELECT 1 FROM "+pgx.Identifier{r.b.Schema(), "transport_flow_keys"}.Sanitize()+
		" WHERE key = 'k' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	ackAll(t, r.leased, g) // must not wait for the holder
	flowState(t, r.leased, "k", 0, 1)
	claimIDs(t, r.leased, 10) // the key is still held: its due row stays
	if n := countRows(t, r.leased, "transport_flow_due"); n == 0 {
		t.Fatal("no due row for the busy key")
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	claimIDs(t, r.leased, 10, "h1")
	if n := countRows(t, r.leased, "transport_flow_due"); n != 0 {
		t.Fatalf("%d due rows left", n)
	}
}

// TestFlowEmptyKeyedGroupGivesPlaceBack checks the empty group an aborted publish leaves behind
// (an ack found the publisher holding it, and the publisher rolled back) when it is keyed: the
// claim that deletes it admits the key's next group, and claims it at once.
func TestFlowEmptyKeyedGroupGivesPlaceBack(t *testing.T) {
	t.Parallel()
	for _, form := range claimForms {
		t.Run(form.name, func(t *testing.T) {
			t.Parallel()
			schema := pgdbtest.Schema(t)
			tr := open(t, schema)
			defer tr.Close()
			ctx := context.Background()
			one := transport.Flow{Key: "k", Concurrency: 1}
			publishFlow(t, tr, "G", "g0", one) // G remembers k
			l, err := form.claim(ctx, tr)
			if err != nil || l == nil || l.Event.ID != "g0" {
				t.Fatalf("Claim = %v, %v; want g0", l, err)
			}
			if err := tr.Ack(ctx, l); err != nil {
				t.Fatal(err)
			}
			tx := ackBesideOpenPublish(t, tr, form.claim) // e1 to G (keyed), acked beside a publish
			publishFlow(t, tr, "H", "h1", one)
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			flowState(t, tr, "k", 1, 1) // the empty G holds k's place
			l, err = form.claim(ctx, tr)
			if err != nil || l == nil || l.Event.ID != "h1" {
				t.Fatalf("Claim = %v, %v; want h1", l, err)
			}
			flowState(t, tr, "k", 1, 0)
			if n := countRows(t, tr, "transport_groups"); n != 1 {
				t.Fatalf("%d group rows, want H's", n)
			}
		})
	}
}

// TestFlowCrossKeyStepsDoNotDeadlock runs steps as worker/pgtx does, each in one transaction: a
// held claim of a group of one key, a publish that creates a group of the other key, and the ack.
// Steps of the two keys do that in opposite orders of keys side by side; no admission waits for a
// key row, so none may deadlock (a deadlock would fail a step with stead.ErrConflict).
func TestFlowCrossKeyStepsDoNotDeadlock(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.Schema(t)
	tr := openOn(t, newPool(t, pgdb.Config{MaxConns: 8}), schema)
	defer tr.Close()
	b := backendOf(tr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const seeds, hops, workers = 10, 30, 6
	flowOf := func(k string) transport.Flow { return transport.Flow{Key: k, Concurrency: 2} }
	for i := range seeds {
		k := []string{"a", "b"}[i%2]
		publishFlow(t, tr, fmt.Sprintf("%s-s%d-0", k, i), fmt.Sprintf("s%d-0", i), flowOf(k))
	}
	var done atomic.Int64
	g, ctx := errgroup(ctx)
	for w := range workers {
		g.Go(func() error {
			for done.Load() < seeds*(hops+1) {
				tx, err := b.Pool().Begin(ctx)
				if err != nil {
					return err
				}
				ls, err := b.ClaimHeldGroupsTx(ctx, tx, fmt.Sprintf("w%d", w), time.Minute, 0, 1, 1, nil)
				if err != nil || len(ls) == 0 {
					_ = tx.Rollback(ctx)
					if err != nil {
						return err
					}
					time.Sleep(time.Millisecond)
					continue
				}
				var seed, hop int
				if _, err := fmt.Sscanf(ls[0].Event.ID, "s%d-%d", &seed, &hop); err != nil {
					return err
				}
				if hop < hops {
					next := []string{"b", "a"}[(seed+hop)%2] // the other key than the group's
					if err := b.PublishBatchTx(ctx, tx, []transport.Outgoing{{
						Group: fmt.Sprintf("%s-s%d-%d", next, seed, hop+1),
						Event: event(fmt.Sprintf("s%d-%d", seed, hop+1)), Flow: flowOf(next)}}); err != nil {
						_ = tx.Rollback(ctx)
						return fmt.Errorf("publish: %w", err)
					}
				}
				if err := ackHeld(b, ctx, tx, ls); err != nil {
					_ = tx.Rollback(ctx)
					return fmt.Errorf("ack: %w", err)
				}
				if err := tx.Commit(ctx); err != nil {
					return fmt.Errorf("commit: %w", err)
				}
				done.Add(1)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	flowState(t, tr, "a", 0, 0)
	flowState(t, tr, "b", 0, 0)
}
