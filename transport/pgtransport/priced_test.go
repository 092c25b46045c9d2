package pgtransport_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb/pgdbtest"
)

// TestPublishPriced checks a publish priced by an expression: NULL publishes nothing, a value
// opens the group at that priority, an existing group keeps its own, and bad input is ErrInvalid
// with nothing written.
func TestPublishPriced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := open(t, pgdbtest.Schema(t))
	defer tr.Close()
	b := backendOf(tr)
	const price = `SELECT p FROM (VALUES ('hi', 6), ('lo', 0)) AS v(g, p) WHERE v.g = $4::text`
	for _, tc := range []struct {
		group string
		want  bool
	}{{"ghost", false}, {"hi", true}, {"lo", true}} {
		ok, err := b.PublishPriced(ctx, tc.group, event("e-"+tc.group), price, tc.group)
		if err != nil || ok != tc.want {
			t.Fatalf("publish to %s: %v, %v; want %v", tc.group, ok, err, tc.want)
		}
	}
	// The existing group keeps the priority its first message gave it.
	if ok, err := b.PublishPriced(ctx, "lo", event("e-lo2"), `SELECT 9`); err != nil || !ok {
		t.Fatalf("second publish to lo: %v, %v", ok, err)
	}
	for _, bad := range []func() (bool, error){
		func() (bool, error) { return b.PublishPriced(ctx, "hi", stead.Event{ID: "x"}, price, "hi") }, // no kind
		func() (bool, error) { return b.PublishPriced(ctx, "", event("x"), price, "hi") },
		func() (bool, error) { return b.PublishPriced(ctx, "hi", event("x"), "") },
	} {
		if ok, err := bad(); ok || !errors.Is(err, stead.ErrInvalid) {
			t.Fatalf("bad publish: %v, %v; want ErrInvalid", ok, err)
		}
	}
	hi, err := tr.ClaimBatch(ctx, "w", time.Minute, 6, 10)
	if err != nil || len(hi) != 1 || hi[0].Group != "hi" || hi[0].Priority != 6 {
		t.Fatalf("claim at 6: %+v %v", hi, err)
	}
	lo, err := tr.ClaimBatch(ctx, "w", time.Minute, 0, 10)
	if err != nil || len(lo) != 1 || lo[0].Group != "lo" || lo[0].Priority != 0 || lo[0].Event.ID != "e-lo" {
		t.Fatalf("claim at 0: %+v %v", lo, err)
	}
	if n := countRows(t, tr, "transport_messages"); n != 3 {
		t.Fatalf("%d messages stored, want 3 (hi, lo twice)", n)
	}
}
