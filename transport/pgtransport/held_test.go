package pgtransport_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/transport/transporttest"
)

// heldRig is a schema with two groups, G (g1, g2) and H (h1), a transport whose backend claims
// held, and another transport on the same schema that claims the ordinary way, both on one clock.
type heldRig struct {
	b     *pgtransport.Backend
	tr    *transport.Transport
	other *transport.Transport
	clock *transporttest.Clock
}

func newHeldRig(t *testing.T) *heldRig {
	t.Helper()
	schema := pgdbtest.Schema(t)
	r := &heldRig{clock: transporttest.NewClock(transporttest.Start)}
	r.tr = open(t, schema, pgtransport.WithClock(r.clock.Now))
	t.Cleanup(func() { _ = r.tr.Close() })
	r.other = open(t, schema, pgtransport.WithClock(r.clock.Now))
	t.Cleanup(func() { _ = r.other.Close() })
	r.b = backendOf(r.tr)
	ctx := context.Background()
	for _, m := range []struct{ group, id string }{{"G", "g1"}, {"G", "g2"}, {"H", "h1"}} {
		if err := r.tr.Publish(ctx, m.group, event(m.id), 0); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func (r *heldRig) begin(t *testing.T) pgx.Tx {
	t.Helper()
	tx, err := r.b.Pool().Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// leaseColumns reads what the group rows say of their lease, from inside tx.
func (r *heldRig) leaseColumns(t *testing.T, tx pgx.Tx) map[string]bool {
	t.Helper()
	rows, err := tx.Query(context.Background(), "SELECT group_id, locked_by IS NOT NULL OR lease_until IS NOT NULL FROM "+
		pgx.Identifier{r.b.Schema(), "transport_groups"}.Sanitize())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	var g string
	var leased bool
	if _, err := pgx.ForEachRow(rows, []any{&g, &leased}, func() error { out[g] = leased; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHeldClaimWritesNoLease checks that a held claim leaves the group rows as they were (no
// lease, not even inside its own transaction), keeps the groups from every other claimer while its
// transaction is open, and frees them the moment it ends, by rollback or by a commit without an
// ack, on both of the claim's paths.
func TestHeldClaimWritesNoLease(t *testing.T) {
	t.Parallel()
	for _, form := range []struct {
		name string
		max  int
		want []string
	}{{"single", 1, []string{"g1"}}, {"batch", 10, []string{"g1", "h1"}}} {
		for _, end := range []string{"rollback", "commit"} {
			t.Run(form.name+"/"+end, func(t *testing.T) {
				t.Parallel()
				r := newHeldRig(t)
				ctx := context.Background()
				tx := r.begin(t)
				ls, err := claimHeld(r.b, ctx, tx, "w1", time.Second, 0, form.max, nil)
				if err != nil || len(ls) != len(form.want) {
					t.Fatalf("claimHeld = %v, %v; want %v", ls, err, form.want)
				}
				for i, l := range ls {
					if l.Event.ID != form.want[i] || l.Token == "" || !l.Until.Equal(r.clock.Now().Add(time.Second)) {
						t.Fatalf("lease %d = %+v; want %s with a token, until a second from now", i, l, form.want[i])
					}
				}
				for g, leased := range r.leaseColumns(t, tx) {
					if leased {
						t.Fatalf("group %s has a lease written inside the claiming transaction", g)
					}
				}
				r.clock.Advance(time.Minute) // whatever a lease would have said, the rows stay locked
				if form.max > 1 {
					if l, err := r.other.Claim(ctx, "w2", time.Second, 0); err != nil || l != nil {
						t.Fatalf("Claim beside an open held claim = %v, %v; want nothing", l, err)
					}
				} else if l, err := r.other.Claim(ctx, "w2", time.Second, 0); err != nil || l == nil || l.Event.ID != "h1" {
					t.Fatalf("Claim beside an open held claim of G = %v, %v; want h1", l, err)
				} else if err := r.other.Nack(ctx, l, 0); err != nil {
					t.Fatal(err)
				}
				if end == "rollback" {
					err = tx.Rollback(ctx)
				} else {
					err = tx.Commit(ctx)
				}
				if err != nil {
					t.Fatal(err)
				}
				// No lease outlives the transaction: every head is claimable at once.
				ls2, err := r.other.ClaimBatch(ctx, "w3", time.Second, 0, 10)
				if err != nil || len(ls2) != 2 || ls2[0].Event.ID != "g1" || ls2[1].Event.ID != "h1" {
					t.Fatalf("after the %s: ClaimBatch = %v, %v; want g1 and h1", end, ls2, err)
				}
			})
		}
	}
}

// TestHeldAckAndNack checks the held acks and nacks: an ack removes the message and sends the
// group on (deleting a drained one), a nack without delay hands the group back at once, and a
// nack with a delay parks it past the transaction, under the lease's token.
func TestHeldAckAndNack(t *testing.T) {
	t.Parallel()
	r := newHeldRig(t)
	ctx := context.Background()
	ack := func(tx pgx.Tx, ls []transport.Lease) error { return ackHeld(r.b, ctx, tx, ls) }
	nack := func(tx pgx.Tx, l *transport.Lease, delay time.Duration) error {
		return nackHeld(r.b, ctx, tx, l, delay)
	}

	// Ack both heads: G goes on to g2, H is drained and deleted.
	tx := r.begin(t)
	ls, err := claimHeld(r.b, ctx, tx, "w1", time.Minute, 0, 10, nil)
	if err != nil || len(ls) != 2 {
		t.Fatalf("claimHeld = %v, %v", ls, err)
	}
	if err := ack(tx, ls); err != nil {
		t.Fatalf("ack: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, r.tr, "transport_groups"); n != 1 {
		t.Fatalf("%d group rows after acking G's head and H's only message; want 1 (G)", n)
	}

	// Park g2 for a minute: it outlives the transaction.
	tx = r.begin(t)
	ls, err = claimHeld(r.b, ctx, tx, "w1", time.Minute, 0, 1, nil)
	if err != nil || len(ls) != 1 || ls[0].Event.ID != "g2" {
		t.Fatalf("claimHeld = %v, %v; want g2", ls, err)
	}
	if err := nack(tx, &ls[0], time.Minute); err != nil {
		t.Fatalf("nack with delay: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if l, err := r.other.Claim(ctx, "w2", time.Second, 0); err != nil || l != nil {
		t.Fatalf("Claim of a parked group = %v, %v; want nothing", l, err)
	}
	// The park is an ordinary lease of the held lease's token: the fenced nack ends it.
	if err := r.tr.Nack(ctx, &ls[0], 0); err != nil {
		t.Fatal(err)
	}

	// Hand g2 back at once, then take it in the ordinary way.
	tx = r.begin(t)
	ls, err = claimHeld(r.b, ctx, tx, "w1", time.Minute, 0, 1, nil)
	if err != nil || len(ls) != 1 || ls[0].Event.ID != "g2" {
		t.Fatalf("claimHeld after the park ended = %v, %v; want g2", ls, err)
	}
	if err := nack(tx, &ls[0], 0); err != nil {
		t.Fatalf("nack: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, r.other, "w3", time.Second); len(got) != 1 || got[0] != "g2" {
		t.Fatalf("after the nack: drained %v; want g2", got)
	}
	if n := countRows(t, r.tr, "transport_groups"); n != 0 {
		t.Fatalf("%d group rows left after every message was acked", n)
	}
}

// TestHeldClaimSkipsItsOwnGroups checks that a second held claim in one transaction, told what the
// first holds, takes other groups: PostgreSQL's SKIP LOCKED does not skip the transaction's own
// row locks.
func TestHeldClaimSkipsItsOwnGroups(t *testing.T) {
	t.Parallel()
	r := newHeldRig(t)
	ctx := context.Background()
	tx := r.begin(t)
	first, err := claimHeld(r.b, ctx, tx, "w", time.Minute, 0, 1, nil)
	if err != nil || len(first) != 1 || first[0].Group != "G" {
		t.Fatalf("first claimHeld = %v, %v; want G's head", first, err)
	}
	second, err := claimHeld(r.b, ctx, tx, "w", time.Minute, 0, 10, []string{"G"})
	if err != nil || len(second) != 1 || second[0].Group != "H" {
		t.Fatalf("second claimHeld = %v, %v; want only H's head", second, err)
	}
	third, err := claimHeld(r.b, ctx, tx, "w", time.Minute, 0, 1, []string{"G", "H"})
	if err != nil || len(third) != 0 {
		t.Fatalf("third claimHeld = %v, %v; want nothing", third, err)
	}
}

// TestHeldInvalid checks that bad input is refused with ErrInvalid before anything is sent: the
// transaction stays usable and nothing was claimed.
func TestHeldInvalid(t *testing.T) {
	t.Parallel()
	r := newHeldRig(t)
	ctx := context.Background()
	tx := r.begin(t)
	for name, call := range map[string]func() error{
		"empty worker": func() error { _, err := claimHeld(r.b, ctx, tx, "", time.Minute, 0, 1, nil); return err },
		"no max":       func() error { _, err := claimHeld(r.b, ctx, tx, "w", time.Minute, 0, 0, nil); return err },
		"empty held":   func() error { _, err := claimHeld(r.b, ctx, tx, "w", time.Minute, 0, 1, []string{""}); return err },
		"NUL in held": func() error {
			_, err := claimHeld(r.b, ctx, tx, "w", time.Minute, 0, 1, []string{"G\x00"})
			return err
		},
		"ack without token": func() error {
			return ackHeld(r.b, ctx, tx, []transport.Lease{{Message: transport.Message{Group: "G", Seq: 1}}})
		},
		"nack of nil": func() error { return nackHeld(r.b, ctx, tx, nil, 0) },
		"negative delay": func() error {
			return r.b.QueueNackHeld(&pgx.Batch{}, &transport.Lease{Message: transport.Message{Group: "G"}, Token: "t"}, -time.Second)
		},
		"queue on nothing": func() error { return r.b.QueueAckHeld(nil, nil) },
	} {
		if err := call(); !errors.Is(err, stead.ErrInvalid) {
			t.Errorf("%s: %v; want ErrInvalid", name, err)
		}
	}
	if ls, err := claimHeld(r.b, ctx, tx, "w", time.Minute, 0, 10, nil); err != nil || len(ls) != 2 {
		t.Fatalf("claimHeld after the refusals = %v, %v; want both heads", ls, err)
	}
}
