package worker_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/worker"
)

// Stamp puts the W3C trace context of the span in ctx on an event, as Client.Send does: the step
// the event causes, on whichever worker claims it, joins that trace.
func ExampleStamp() {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	ev := worker.Stamp(ctx, stead.Event{ID: "paid-1", Kind: "paid"})
	fmt.Println(ev.Trace)
	// Output: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
}
