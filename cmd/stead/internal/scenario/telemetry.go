package scenario

import (
	"context"
	"sync/atomic"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// sdk is the OpenTelemetry SDK as a deployment runs it, for a run with Config.Telemetry: every
// span sampled and batched to an exporter, every instrument aggregated. The exporter counts what
// it is given and drops it, and the metric reader is never collected, so a run measures the
// worker's and the SDK's cost, not a collector's or a network's.
type sdk struct {
	tp    *sdktrace.TracerProvider
	mp    *sdkmetric.MeterProvider
	spans atomic.Int64
}

func newSDK() *sdk {
	s := &sdk{}
	s.tp = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithBatcher(countingExporter{&s.spans}))
	s.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	return s
}

// shutdown flushes the spans still queued to the exporter and stops both providers.
func (s *sdk) shutdown(ctx context.Context) error {
	err := s.tp.Shutdown(ctx)
	if merr := s.mp.Shutdown(ctx); err == nil {
		err = merr
	}
	return err
}

// countingExporter is a span exporter that counts the spans and drops them.
type countingExporter struct{ n *atomic.Int64 }

func (e countingExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.n.Add(int64(len(spans)))
	return nil
}

func (countingExporter) Shutdown(context.Context) error { return nil }
