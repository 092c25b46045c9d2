package otelstead_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/benchutil"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/otelstead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/transport/sqlitetransport"
	"github.com/steadhq/stead/worker"
	"github.com/steadhq/stead/worker/pgtx"
)

// benchRig is one worker running the counter machine on its own store and transport, with
// telemetry off or on, fed rounds of tick events.
type benchRig struct {
	store     *stead.Store
	tr        *transport.Transport
	committed atomic.Int64
	exes      []string
	round     int
	flush     func() // hands the batched spans to the exporter (on), so a round pays for its own
}

// newBenchRig makes a rig; on, it records with the SDK, keeping the share sample of the traces
// (1: every one).
func newBenchRig(b *testing.B, backend string, batch int, on bool, sample float64, executions int) *benchRig {
	b.Helper()
	ctx := context.Background()
	r := &benchRig{}
	var shared worker.SharedDB
	switch backend {
	case "memory":
		r.store, r.tr = memstore.New(), memtransport.New()
	case "sqlite":
		db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = db.Close() })
		if r.store, err = sqlitestore.New(ctx, db); err != nil {
			b.Fatal(err)
		}
		if r.tr, err = sqlitetransport.New(ctx, db); err != nil {
			b.Fatal(err)
		}
	case "postgres":
		shared = openPostgresRig(b, r)
	default:
		b.Fatalf("no backend %q", backend)
	}
	b.Cleanup(func() { _ = r.tr.Close(); _ = r.store.Close() })
	cfg := worker.Config{Store: r.store, Transport: r.tr, Machines: worker.Machines{"counter": otelstead.Counter}, Name: "bench",
		BatchSize: batch, SharedTx: shared,
		OnCommit: func(*stead.Execution, stead.Event, time.Time) { r.committed.Add(1) }}
	if on {
		// The SDK as a deployment runs it: every span sampled and batched to an exporter (one
		// that drops them, so the cost measured is the worker's and the SDK's, not a network's),
		// every instrument aggregated (a reader that is never collected).
		sampler := sdktrace.AlwaysSample()
		if sample < 1 {
			sampler = sdktrace.ParentBased(sdktrace.TraceIDRatioBased(sample)) // stead run --trace-sample
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() { _ = tp.Shutdown(ctx); _ = mp.Shutdown(ctx) })
		obs, err := otelstead.New(otelstead.Config{TracerProvider: tp, MeterProvider: mp})
		if err != nil {
			b.Fatal(err)
		}
		cfg.Observer = obs
		r.flush = func() { _ = tp.ForceFlush(ctx) }
	}
	w, err := worker.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	client := &worker.Client{Store: r.store, Transport: r.tr}
	news := make([]worker.NewExecution, executions)
	for i := range news {
		news[i] = worker.NewExecution{DefinitionID: "counter", ID: fmt.Sprintf("e%03d", i)}
		r.exes = append(r.exes, news[i].ID)
	}
	if _, err := client.CreateBatch(ctx, news); err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	b.Cleanup(func() { stop(); <-done })
	r.wait(b, int64(executions)) // the starts
	return r
}

// openPostgresRig opens r's store and transport the way stead run does on PostgreSQL — pgstore
// and pgtransport on one pool of 2×loops+4 connections, in a fresh schema dropped afterwards —
// and returns their shared transaction (pgtx), stead run's default there. An unreachable server
// fails the benchmark: it does not skip.
func openPostgresRig(b *testing.B, r *benchRig) worker.SharedDB {
	b.Helper()
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, pgdbtest.URL(), pgdb.Config{MaxConns: 2*worker.DefaultConcurrency + 4})
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		b.Fatalf("PostgreSQL at %s (STEAD_TEST_DATABASE_URL) is unreachable: %v", pgdbtest.URL(), err)
	}
	b.Cleanup(pool.Close)
	schema := pgdbtest.NewName(b)
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		b.Fatalf("create schema %s: %v", schema, err)
	}
	b.Cleanup(func() { pgdbtest.Drop(b, pool, schema) })
	if r.store, err = pgstore.New(ctx, pool, pgstore.WithSchema(schema)); err != nil {
		b.Fatal(err)
	}
	if r.tr, err = pgtransport.New(ctx, pool, pgtransport.WithSchema(schema)); err != nil {
		b.Fatal(err)
	}
	shared, err := pgtx.New(r.store, r.tr)
	if err != nil {
		b.Fatal(err)
	}
	return shared
}

// wait blocks until n steps in all have committed.
func (r *benchRig) wait(b *testing.B, n int64) {
	deadline := time.Now().Add(time.Minute)
	for r.committed.Load() < n {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d steps committed after a minute", r.committed.Load(), n)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// run publishes perExe ticks to every execution and returns how long until all committed, on
// the wall clock and in CPU time of the whole process (what the machine's other load disturbs
// least).
func (r *benchRig) run(b *testing.B, perExe int) (wall, cpu time.Duration) {
	r.round++
	target := r.committed.Load() + int64(perExe*len(r.exes))
	out := make([]transport.Outgoing, 0, len(r.exes))
	cpu0 := benchutil.CPUTime()
	start := time.Now()
	for k := range perExe {
		out = out[:0]
		for _, id := range r.exes {
			out = append(out, transport.Outgoing{Group: id, Event: stead.Event{
				ID: fmt.Sprintf("r%d-%d", r.round, k), Kind: "tick"}})
		}
		if err := r.tr.PublishBatch(context.Background(), out); err != nil {
			b.Fatal(err)
		}
	}
	r.wait(b, target)
	if r.flush != nil {
		r.flush()
	}
	return time.Since(start), benchutil.CPUTime() - cpu0
}

// BenchmarkTelemetryOverhead runs the worker loop with telemetry off and on, in alternating
// rounds of the same work on two identical rigs (each iteration runs both, swapping which goes
// first), and reports the median time per step of each and their ratio: the worker's default
// configuration, as stead run uses it, and unbatched (--batch 1), where every message is a span
// of its own. The postgres case is stead run on PostgreSQL: pgstore and pgtransport in one
// shared transaction per batch (pgtx), the fleet's deployment. The controls run two rigs with
// telemetry off the same way: their ratio is the noise floor of the comparison on the machine at
// hand. The sampled case is the unbatched SQLite one keeping a tenth of the traces
// (--trace-sample 0.1), every metric still recorded. The CPU time is the benchmark process's
// only: on PostgreSQL the server's share of a step is not in it, so there the wall time is the
// step's cost.
func BenchmarkTelemetryOverhead(b *testing.B) {
	const executions, perExe = 64, 16 // 1,024 steps a round
	for _, c := range []struct {
		name, backend string
		batch         int
		control       bool    // both rigs off: what on/off reads when nothing differs
		sample        float64 // the share of traces kept, when not every one (--trace-sample)
	}{
		{name: "postgres", backend: "postgres"}, {name: "postgres-control", backend: "postgres", control: true},
		{name: "sqlite", backend: "sqlite"}, {name: "memory", backend: "memory"},
		{name: "sqlite-unbatched", backend: "sqlite", batch: 1}, {name: "memory-unbatched", backend: "memory", batch: 1},
		{name: "sqlite-control", backend: "sqlite", control: true},
		{name: "sqlite-unbatched-sampled", backend: "sqlite", batch: 1, sample: 0.1},
	} {
		b.Run(c.name, func(b *testing.B) {
			sample := c.sample
			if sample == 0 {
				sample = 1
			}
			off := newBenchRig(b, c.backend, c.batch, false, 1, executions)
			on := newBenchRig(b, c.backend, c.batch, !c.control, sample, executions)
			var wallOff, wallOn, cpuOff, cpuOn []float64
			steps := float64(executions * perExe)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				first, second := off, on
				if i%2 == 1 {
					first, second = on, off
				}
				for _, r := range []*benchRig{first, second} {
					wall, cpu := r.run(b, perExe)
					if r == off {
						wallOff, cpuOff = append(wallOff, wall.Seconds()/steps), append(cpuOff, cpu.Seconds()/steps)
					} else {
						wallOn, cpuOn = append(wallOn, wall.Seconds()/steps), append(cpuOn, cpu.Seconds()/steps)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(benchutil.Median(wallOff)*1e6, "off-µs/step")
			b.ReportMetric(benchutil.Median(wallOn)*1e6, "on-µs/step")
			b.ReportMetric(benchutil.Median(wallOn)/benchutil.Median(wallOff), "on/off")
			b.ReportMetric(benchutil.Median(cpuOff)*1e6, "off-cpu-µs/step")
			b.ReportMetric(benchutil.Median(cpuOn)*1e6, "on-cpu-µs/step")
			b.ReportMetric(benchutil.Median(cpuOn)/benchutil.Median(cpuOff), "cpu-on/off")
		})
	}
}
