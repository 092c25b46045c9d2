package scenario

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/steadhq/stead/pgdb/pgdbtest"
)

var (
	flagExecutions = flag.Int("bench.executions", 200, "executions in the backlog of BenchmarkEndToEnd")
	flagEventsPer  = flag.Int("bench.events", 10, "events per execution in BenchmarkEndToEnd")
	flagLog        = flag.Bool("bench.log", false, "log the worker's warnings to stderr")
)

// BenchmarkEndToEnd drains a backlog (bench.executions × bench.events events; the full scenario
// is 10000 × 10, run it with `stead bench`) through one worker, per backend, mode and
// concurrency. It reports events/s and the publish→commit latency quantiles; b.N is the number
// of whole drains.
func BenchmarkEndToEnd(b *testing.B) {
	type mode struct {
		name   string
		pg     bool
		shared bool
		batch  int
	}
	modes := []mode{
		{"sqlite/unbatched", false, false, 1},
		{"sqlite/batched", false, false, 128},
		{"postgres/unbatched", true, false, 1},
		{"postgres/batched", true, false, 128},
		{"postgres/shared-tx-unbatched", true, true, 1},
		{"postgres/shared-tx-batched", true, true, 128},
	}
	for _, m := range modes {
		for _, c := range []int{1, 8, 32} {
			b.Run(fmt.Sprintf("%s/c=%d", m.name, c), func(b *testing.B) {
				var total Result
				for i := 0; b.Loop(); i++ {
					cfg := Config{Executions: *flagExecutions, EventsPer: *flagEventsPer, Concurrency: c,
						BatchSize: m.batch, SharedTx: m.shared}
					if *flagLog {
						cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
					}
					if m.pg {
						cfg.Store, cfg.Schema = pgdbtest.URL(), pgdbtest.Schema(b)
					} else {
						cfg.Store = filepath.Join(b.TempDir(), fmt.Sprintf("bench-%d.db", i))
					}
					res, err := Run(context.Background(), cfg)
					if err != nil {
						b.Fatal(err)
					}
					total.Events += res.Events
					total.Elapsed += res.Elapsed
					total.P50, total.P99 = res.P50, res.P99
				}
				b.ReportMetric(float64(total.Events)/total.Elapsed.Seconds(), "events/s")
				b.ReportMetric(float64(total.P50.Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(total.P99.Microseconds())/1000, "p99-ms")
			})
		}
	}
}
