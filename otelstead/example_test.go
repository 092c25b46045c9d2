package otelstead_test

import (
	"context"
	"fmt"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/otelstead"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/worker"
)

// paid is a machine that finishes an execution on its first "paid" event.
type paid struct{}

func (paid) Step(exe *stead.Execution, ev stead.Event, _ time.Time) (*stead.Execution, stead.Bundle, error) {
	next := exe.Clone()
	next.Status = stead.StatusRunning
	if ev.Kind == "paid" {
		next.Status = stead.StatusDone
	}
	return next, stead.Bundle{ProcessedEventID: ev.ID}, nil
}

// One Observer watches the worker and stamps what the client sends: the step of the event sent
// under the "checkout" span is a span of the checkout's trace.
func Example() {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	obs, err := otelstead.New(otelstead.Config{TracerProvider: tp})
	if err != nil {
		panic(err)
	}
	store, tr := memstore.New(), memtransport.New()
	client := &worker.Client{Store: store, Transport: tr, Stamper: obs}
	finished := make(chan struct{})
	w, err := worker.New(worker.Config{Store: store, Transport: tr, Machines: worker.Machines{"order": paid{}},
		BatchSize: 1, Observer: obs, OnFinish: func(*stead.Execution) { close(finished) }})
	if err != nil {
		panic(err)
	}
	if _, err := client.Create(ctx, "order", "order-1", nil); err != nil {
		panic(err)
	}
	run, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(run) }()

	checkout, span := tp.Tracer("shop").Start(ctx, "checkout")
	if _, err := client.Send(checkout, "order-1", stead.Event{ID: "paid-1", Kind: "paid"}); err != nil {
		panic(err)
	}
	span.End()
	<-finished
	stop()
	<-done // the step's span has ended

	for _, s := range spans.Ended() {
		if s.Name() == "stead.step" && s.Parent().TraceID() == span.SpanContext().TraceID() {
			fmt.Println(s.Name(), "in the checkout's trace, under", parentName(spans.Ended(), s.Parent()))
		}
	}
	// Output: stead.step in the checkout's trace, under checkout
}

func parentName(spans []sdktrace.ReadOnlySpan, parent trace.SpanContext) string {
	for _, s := range spans {
		if s.SpanContext().SpanID() == parent.SpanID() {
			return s.Name()
		}
	}
	return "?"
}

// Stamp puts the W3C trace context of the span in ctx on an event, as a Client whose Stamper is
// an Observer does on what it sends: the step the event causes, on whichever worker claims it,
// joins that trace.
func ExampleStamp() {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	ev := otelstead.Stamp(ctx, stead.Event{ID: "paid-1", Kind: "paid"})
	fmt.Println(ev.Trace)
	// Output: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
}
