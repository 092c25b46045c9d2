package otelstead_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/otelstead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/transport/sqlitetransport"
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
		open func(t *testing.T) (*stead.Store, *transport.Transport)
	}{
		{"sqlite", openSQLite}, {"postgres", openPostgres},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			store, tr := c.open(t)
			client := &worker.Client{Store: store, Transport: tr}
			if _, err := client.CreateBatch(ctx, []worker.NewExecution{
				{DefinitionID: "parked", ID: "g1"}, {DefinitionID: "parked", ID: "g2"},
				{DefinitionID: "parked", ID: "g3", Priority: 2},
			}); err != nil {
				t.Fatal(err)
			}
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			t.Cleanup(func() { _ = mp.Shutdown(ctx) })
			obs, err := otelstead.New(otelstead.Config{MeterProvider: mp, StatsInterval: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			w, err := worker.New(worker.Config{Store: store, Transport: tr,
				Machines: worker.Machines{"other": idle{}}, Observer: obs, Concurrency: 1,
				RetryDelay: time.Hour, IdleWait: 10 * time.Millisecond})
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
			m += " " + k + "=" + kv.Value.String()
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

// openSQLite opens a store and a transport on one SQLite file, closed when the test ends.
func openSQLite(t *testing.T) (*stead.Store, *transport.Transport) {
	ctx := context.Background()
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: filepath.Join(t.TempDir(), "stead.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	store, err := sqlitestore.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := sqlitetransport.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close(); _ = store.Close() })
	return store, tr
}

// openPostgres opens a store and a transport on one pool, in a schema of the test's own.
func openPostgres(t *testing.T) (*stead.Store, *transport.Transport) {
	ctx := context.Background()
	schema := pgdbtest.Schema(t)
	pool, err := pgdb.Open(ctx, pgdbtest.URL(), pgdb.Config{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	store, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close(); _ = store.Close() })
	return store, tr
}
