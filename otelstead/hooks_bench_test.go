package otelstead

import (
	"context"
	"fmt"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/worker"
)

// BenchmarkBatchHooks measures the telemetry hooks of one batch of 64 steps alone, with the SDK
// as BenchmarkTelemetryOverhead runs it: what the worker adds per batch, without a store or a
// transport around it. The events carry a trace context, as a client's do, and a committed step
// commits at its version + 1, as a store does. The uniform batch is the runtime benchmark's: one
// definition, one event kind, every step committed. The mixed one has two definitions, four
// event kinds, a lost compare-and-swap in every eight steps and a redelivery in every sixteen.
func BenchmarkBatchHooks(b *testing.B) {
	b.Run("uniform", func(b *testing.B) { benchBatchHooks(b, false) })
	b.Run("mixed", func(b *testing.B) { benchBatchHooks(b, true) })
}

func benchBatchHooks(b *testing.B, mixed bool) {
	ctx := context.Background()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = tp.Shutdown(ctx); _ = mp.Shutdown(ctx) })
	tel, err := New(Config{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		b.Fatal(err)
	}
	sctx, span := tp.Tracer("client").Start(ctx, "send")
	carried := inject(sctx)
	span.End()
	const n = 64
	kinds := []string{"tick", "pay", "ship", "notify"}
	leases := make([]transport.Lease, n)
	exes := make([]*stead.Execution, n)
	nexts := make([]*stead.Execution, n)
	for i := range leases {
		kind, def := "tick", "counter"
		if mixed {
			kind = kinds[i%len(kinds)]
			if i%3 == 0 {
				def = "order@2"
			}
		}
		leases[i].Group, leases[i].Event = fmt.Sprintf("e%03d", i), stead.Event{ID: fmt.Sprintf("ev%d", i), Kind: kind, Trace: carried}
		exes[i] = &stead.Execution{ID: leases[i].Group, DefinitionID: def, Version: 3, Status: stead.StatusRunning}
		nexts[i] = &stead.Execution{ID: leases[i].Group, DefinitionID: def, Version: 4, Status: stead.StatusRunning}
	}
	var bundle stead.Bundle
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		_, obs := tel.Batch(ctx, worker.Claim{Leases: leases, Start: time.Now()})
		for i := range leases {
			duplicate := mixed && i%16 == 15
			obs.Loaded(i, exes[i])
			switch {
			case duplicate:
				obs.Outcome(i, worker.StepDuplicate, nil)
			case mixed && i%8 == 3:
				obs.Stepped(i, &bundle)
				obs.Outcome(i, worker.StepConflict, nil)
			default:
				obs.Stepped(i, &bundle)
				obs.Committed(i, nexts[i])
			}
		}
		obs.End()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
}
