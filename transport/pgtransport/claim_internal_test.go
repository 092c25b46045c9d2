package pgtransport

import (
	"context"
	"testing"
	"time"

	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/transporttest"
)

// TestClaimUpdatesInPlace checks that a claim (and a park) changes only columns no index covers,
// so PostgreSQL rewrites the group row in place (a HOT update) without new index entries; only
// the ack, which moves the group in the round-robin, touches the index. pg_stat_xact_user_tables
// counts only the current transaction's updates, so the claim's and the nack's statements are sent
// in one transaction here, as ClaimBatch and Nack send them through the pool.
func TestClaimUpdatesInPlace(t *testing.T) {
	t.Parallel()
	for _, form := range []struct {
		name string
		max  int
	}{{"single", 1}, {"batch", 3}} {
		t.Run(form.name, func(t *testing.T) {
			t.Parallel()
			schema := pgdbtest.Schema(t)
			tr, b := openInternal(t, schema)
			defer tr.Close()
			ctx := context.Background()
			for _, g := range []string{"A", "B", "C"} {
				if err := tr.Publish(ctx, g, transporttest.Event(g+"1"), 0); err != nil {
					t.Fatal(err)
				}
			}
			tx, err := b.Pool().Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck // the test only reads counters
			now := b.now()
			until, token := now.Add(time.Minute), transport.NewToken("w")
			rows, err := tx.Query(ctx, b.st.Claim, now, until, token, 0, form.max, nil, nil, true)
			if err != nil {
				t.Fatal(err)
			}
			ls, err := b.leases(rows, b.sig.Gen(), token, until, 0)
			if err != nil || len(ls) != form.max {
				t.Fatalf("claim = %d leases, %v; want %d", len(ls), err, form.max)
			}
			if err := b.nacked(tx.QueryRow(ctx, b.st.Nack, b.nackArgs(&ls[0], time.Hour)...)); err != nil { // a park
				t.Fatal(err)
			}
			var upd, hot int64
			if err := tx.QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables
				WHERE schemaname = $1 AND relname = 'transport_groups'`, schema).Scan(&upd, &hot); err != nil {
				t.Fatal(err)
			}
			if want := int64(form.max + 1); upd != want || hot != want {
				t.Fatalf("%d updates of which %d in place, want %d and %d", upd, hot, want, want)
			}
		})
	}
}
