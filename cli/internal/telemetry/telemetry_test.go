package telemetry

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/steadhq/stead/pgdb/pgdbtest"
)

// TestOTLPExportsTracesAndMetrics points --otlp-endpoint at a local collector stand-in and sees a
// span and the metrics arrive on the OTLP/HTTP paths when the providers shut down.
func TestOTLPExportsTracesAndMetrics(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.URL.Path]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	ctx := context.Background()
	tel, err := Setup(ctx, Options{OTLPEndpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if tel.TracerProvider == nil || tel.MeterProvider == nil {
		t.Fatal("an OTLP endpoint gave no tracer or meter provider")
	}
	_, span := tel.TracerProvider.Tracer("test").Start(ctx, "a step")
	span.End()
	counter, err := tel.MeterProvider.Meter("test").Int64Counter("stead.test")
	if err != nil {
		t.Fatal(err)
	}
	counter.Add(ctx, 1)
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got["/v1/traces"] == 0 || got["/v1/metrics"] == 0 {
		t.Fatalf("the collector received %v, want /v1/traces and /v1/metrics", got)
	}
}

// TestNothingWithoutAnAddress: no flag, no provider, no endpoint.
func TestNothingWithoutAnAddress(t *testing.T) {
	tel, err := Setup(context.Background(), Options{})
	if err != nil || tel.TracerProvider != nil || tel.MeterProvider != nil || tel.Addr != "" {
		t.Fatalf("Setup without addresses = %+v, %v", tel, err)
	}
}

// TestObservePool reads a PostgreSQL pool's connection gauges.
func TestObservePool(t *testing.T) {
	pool := pgdbtest.Pool(t)
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(ctx) }()
	reg, err := ObservePool(mp, pool, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Unregister() }()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	values := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range s.DataPoints {
					state, _ := p.Attributes.Value("db.client.connection.state")
					values[m.Name+" "+state.AsString()] = p.Value
				}
			}
		}
	}
	if values["db.client.connection.count used"] < 1 || values["db.client.connection.max "] < 1 {
		t.Fatalf("pool gauges %v, want at least one used connection and a maximum", values)
	}
}

// TestBadEndpointsAreRefused: an endpoint that is no http(s) URL, or a metrics address that
// cannot be bound, fails Setup.
func TestBadEndpointsAreRefused(t *testing.T) {
	for _, o := range []Options{
		{OTLPEndpoint: "collector:4318"},
		{OTLPEndpoint: "ftp://collector"},
		{MetricsAddr: "256.0.0.1:1"},
	} {
		if tel, err := Setup(context.Background(), o); err == nil {
			_ = tel.Shutdown(context.Background())
			t.Errorf("Setup(%+v) succeeded", o)
		}
	}
}

// TestSampler: --trace-sample's sampler keeps a share of root traces, follows a known parent's
// decision whatever the ratio, and refuses a ratio outside [0, 1].
func TestSampler(t *testing.T) {
	for _, bad := range []float64{-0.1, 1.01, math.NaN(), math.Inf(1)} {
		if _, err := Sampler(bad); err == nil || !strings.Contains(err.Error(), "--trace-sample") {
			t.Errorf("Sampler(%v) = %v, want an error naming --trace-sample", bad, err)
		}
	}
	ctx := context.Background()
	parent := func(sampled bool) context.Context {
		cfg := trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, Remote: true}
		if sampled {
			cfg.TraceFlags = trace.FlagsSampled
		}
		return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(cfg))
	}
	for _, tc := range []struct {
		ratio                 float64
		lowRoots, highRoots   int // of 2,000 root spans
		sampledKid, unsampled bool
	}{
		{1, 2000, 2000, true, false},
		{0, 0, 0, true, false},
		{0.25, 400, 600, true, false},
	} {
		s, err := Sampler(tc.ratio)
		if err != nil {
			t.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(s))
		tr := tp.Tracer("test")
		roots := 0
		for range 2000 {
			_, span := tr.Start(ctx, "root")
			if span.IsRecording() {
				roots++
			}
			span.End()
		}
		if roots < tc.lowRoots || roots > tc.highRoots {
			t.Errorf("ratio %v kept %d of 2000 roots, want %d to %d", tc.ratio, roots, tc.lowRoots, tc.highRoots)
		}
		if _, span := tr.Start(parent(true), "kid"); span.IsRecording() != tc.sampledKid {
			t.Errorf("ratio %v: a child of a sampled parent records %v", tc.ratio, span.IsRecording())
		}
		if _, span := tr.Start(parent(false), "kid"); span.IsRecording() != tc.unsampled {
			t.Errorf("ratio %v: a child of an unsampled parent records %v", tc.ratio, span.IsRecording())
		}
		_ = tp.Shutdown(ctx)
	}
}

// TestSetupTakesTheSampler: the tracer provider Setup makes samples with Options.Sampler.
func TestSetupTakesTheSampler(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		ratio float64
		want  bool
	}{{0, false}, {1, true}} {
		s, err := Sampler(tc.ratio)
		if err != nil {
			t.Fatal(err)
		}
		tel, err := Setup(ctx, Options{OTLPEndpoint: srv.URL, Sampler: s})
		if err != nil {
			t.Fatal(err)
		}
		_, span := tel.TracerProvider.Tracer("test").Start(ctx, "root")
		if span.IsRecording() != tc.want {
			t.Errorf("Setup with Sampler(%v): a root span records %v, want %v", tc.ratio, span.IsRecording(), tc.want)
		}
		span.End()
		if err := tel.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
