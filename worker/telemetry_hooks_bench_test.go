package worker

import (
	"context"
	"fmt"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/memtransport"
)

// BenchmarkBatchHooks measures the telemetry hooks of one batch of 64 committed steps alone,
// with the SDK as BenchmarkTelemetryOverhead runs it: what the worker adds per batch, without a
// store or a transport around it. The events carry a trace context, as a client's do.
func BenchmarkBatchHooks(b *testing.B) {
	ctx := context.Background()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = tp.Shutdown(ctx); _ = mp.Shutdown(ctx) })
	tel, err := newTelemetry(Config{Store: memstore.New(), Transport: memtransport.New(), TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		b.Fatal(err)
	}
	sctx, span := tp.Tracer("client").Start(ctx, "send")
	carried := inject(sctx)
	span.End()
	const n = 64
	leases := make([]transport.Lease, n)
	exes := make([]*stead.Execution, n)
	for i := range leases {
		leases[i].Group, leases[i].Event = fmt.Sprintf("e%03d", i), stead.Event{ID: fmt.Sprintf("ev%d", i), Kind: "tick", Trace: carried}
		exes[i] = &stead.Execution{ID: leases[i].Group, DefinitionID: "counter", Version: 3, Status: stead.StatusRunning}
	}
	var bundle stead.Bundle
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := tel.now()
		_, obs, bspan := tel.beginBatch(ctx, leases, start)
		for i := range leases {
			o := obs.at(i)
			o.loaded(exes[i], false, doStep)
			o.stepped(&bundle)
			o.committed(exes[i])
		}
		obs.end(bspan)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
}
