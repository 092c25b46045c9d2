package worker_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/worker"
)

// idle is a machine for a definition no test execution has.
type idle struct{}

func (idle) Step(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	return exe.Clone(), stead.Bundle{}, nil
}

// TestGauges reads the queue, backlog and status gauges from SQLite and PostgreSQL. The
// executions are of a definition the worker has no machine for, with an hour's retry delay, so
// their start events stay queued and they stay pending while the gauges are read.
func TestGauges(t *testing.T) {
	for _, c := range []struct {
		name string
		spec func(t *testing.T) (string, string)
	}{
		{"sqlite", func(t *testing.T) (string, string) { return filepath.Join(t.TempDir(), "stead.db"), "" }},
		{"postgres", func(t *testing.T) (string, string) { return pgdbtest.URL(), pgdbtest.Schema(t) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			spec, schema := c.spec(t)
			b, err := openBackend(ctx, spec, schema)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close() })
			client := &worker.Client{Store: b.Store, Transport: b.Transport}
			if _, err := client.CreateBatch(ctx, []worker.NewExecution{
				{DefinitionID: "parked", ID: "g1"}, {DefinitionID: "parked", ID: "g2"},
				{DefinitionID: "parked", ID: "g3", Priority: 2},
			}); err != nil {
				t.Fatal(err)
			}
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			t.Cleanup(func() { _ = mp.Shutdown(ctx) })
			w, err := worker.New(worker.Config{Store: b.Store, Transport: b.Transport,
				Machines: worker.Machines{"other": idle{}}, MeterProvider: mp, Concurrency: 1,
				RetryDelay: time.Hour, StatsInterval: time.Millisecond, IdleWait: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- w.Run(runCtx) }()
			defer func() {
				stop()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()
			want := map[string]int64{
				"stead.queue.depth priority=0": 2, "stead.queue.depth priority=2": 1,
				"stead.executions status=pending": 3, "stead.outbox.backlog": 0, "stead.spawn.backlog": 0,
			}
			var got map[string]int64
			deadline := time.Now().Add(10 * time.Second)
			for {
				var rm metricdata.ResourceMetrics
				if err := reader.Collect(ctx, &rm); err != nil {
					t.Fatal(err)
				}
				got = gauges(rm)
				if matches(got, want) && got["stead.queue.oldest_age priority=0"] >= 0 && hasKey(got, "stead.queue.oldest_age priority=2") {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("gauges %v, want %v and an oldest age per priority", got, want)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// gauges flattens the gauge points to "name key=value" (the attribute's last name part).
func gauges(rm metricdata.ResourceMetrics) map[string]int64 {
	out := map[string]int64{}
	name := func(m string, set attribute.Set) string {
		for _, kv := range set.ToSlice() {
			k := string(kv.Key)
			for i := len(k) - 1; i >= 0; i-- {
				if k[i] == '.' {
					k = k[i+1:]
					break
				}
			}
			m += " " + k + "=" + kv.Value.Emit()
		}
		return m
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch g := m.Data.(type) {
			case metricdata.Gauge[int64]:
				for _, p := range g.DataPoints {
					out[name(m.Name, p.Attributes)] = p.Value
				}
			case metricdata.Gauge[float64]:
				for _, p := range g.DataPoints {
					out[name(m.Name, p.Attributes)] = int64(p.Value)
				}
			}
		}
	}
	return out
}

func matches(got, want map[string]int64) bool {
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			return false
		}
	}
	return true
}

func hasKey(m map[string]int64, k string) bool { _, ok := m[k]; return ok }
