package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/cli/backend"
	"github.com/steadhq/stead/pgdb/pgdbtest"
)

// TestRunDrainsTheBacklog runs the scenario small and checks that it processed every event of
// the backlog exactly once, whatever the mode.
func TestRunDrainsTheBacklog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		pg     bool
		shared bool
		batch  int
	}{
		{"sqlite unbatched", false, false, 1},
		{"sqlite batched", false, false, 16},
		{"sqlite one-tx batched", false, true, 16},
		{"postgres batched", true, false, 16},
		{"postgres shared-tx", true, true, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Executions: 30, EventsPer: 6, Concurrency: 3, BatchSize: tc.batch, SharedTx: tc.shared,
				Notify: true, Trickle: 5}
			if tc.pg {
				cfg.Store, cfg.Schema = pgdbtest.URL(), pgdbtest.Schema(t)
			} else {
				cfg.Store = filepath.Join(t.TempDir(), "b.db")
			}
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Events != 180 || res.Partial || res.PerSecond <= 0 || res.P99 < res.P50 || res.PeakHeap == 0 ||
				res.IdleP50 <= 0 || res.IdleP99 < res.IdleP50 {
				t.Fatalf("result %+v", res)
			}
			b, err := backend.Open(context.Background(), cfg.Store, backend.Options{Schema: cfg.Schema})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			for i := range cfg.Executions {
				exe, err := b.Store.Load(context.Background(), fmt.Sprintf("bench-%06d", i))
				if err != nil {
					t.Fatal(err)
				}
				var n struct{ N int }
				_ = json.Unmarshal(exe.Context, &n)
				// Trickle events land on the first executions, one each, after they finished.
				want := cfg.EventsPer - 1
				if i < cfg.Trickle {
					want++
				}
				if exe.Status != stead.StatusDone || n.N != want {
					t.Fatalf("%s: %s n=%d", exe.ID, exe.Status, n.N)
				}
			}
			md := Markdown([]Row{{Result: res}})
			if !strings.Contains(md, "| 180 |") {
				t.Fatalf("markdown:\n%s", md)
			}
		})
	}
}

// TestMatrixWithTelemetry runs the SQLite rows (separate and one-transaction, unbatched and
// batched) with telemetry off and on: every row comes twice,
// the on run exported spans through the SDK (and the off run none), and the report ends with the
// on ÷ off ratios of each row.
func TestMatrixWithTelemetry(t *testing.T) {
	t.Parallel()
	rows, err := RunMatrix(context.Background(), Matrix{SQLite: true, Executions: 20, EventsPer: 4,
		Concurrency: []int{2}, Batch: 8, Telemetry: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 8 {
		t.Fatalf("%d rows, want both modes unbatched and batched, each off and on: %+v", len(rows), rows)
	}
	ons := 0
	for _, r := range rows {
		if r.Err != nil || r.Events != 80 || r.Partial {
			t.Fatalf("row %+v", r)
		}
		switch {
		case r.Telemetry && r.Spans == 0:
			t.Fatalf("telemetry on exported no span: %+v", r)
		case !r.Telemetry && r.Spans != 0:
			t.Fatalf("telemetry off exported %d spans", r.Spans)
		case r.Telemetry:
			ons++
		}
	}
	if ons != 4 {
		t.Fatalf("%d rows with telemetry on, want 4", ons)
	}
	md := Markdown(rows)
	if !strings.Contains(md, "telemetry on ÷ off") || strings.Count(md, "| sqlite | separate, ") != 6 ||
		strings.Count(md, "| sqlite | one-tx, ") != 6 {
		t.Fatalf("markdown:\n%s", md)
	}
}
