package otelstead

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/worker"
)

// tracer is one host's tracing: its own provider and in-memory exporter, as two processes would
// have.
type tracer struct {
	exp *tracetest.InMemoryExporter
	tp  *sdktrace.TracerProvider
}

// observe returns the Observer of tp and mp (either may be nil).
func observe(t *testing.T, tp trace.TracerProvider, mp metric.MeterProvider) *Observer {
	t.Helper()
	o, err := New(Config{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func newTracer(t *testing.T) *tracer {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return &tracer{exp: exp, tp: tp}
}

// step returns the step span of the execution and event kind, failing if there is none.
func (tr *tracer) step(t *testing.T, execution, kind string) tracetest.SpanStub {
	t.Helper()
	for _, s := range tr.exp.GetSpans() {
		if s.Name == "stead.step" && attr(s.Attributes, attrExecution) == execution && attr(s.Attributes, attrEventKind) == kind {
			return s
		}
	}
	t.Fatalf("no step span for %s %s among %d spans", execution, kind, len(tr.exp.GetSpans()))
	return tracetest.SpanStub{}
}

// stepAttrs reads the attributes of the step a batch span's link stands for, as the package doc
// tells a reader of a trace to: the link's own, then what the batch span holds for all of its
// steps, and for a committed step without a version after, the version before + 1.
func stepAttrs(batch tracetest.SpanStub, l sdktrace.Link) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range batch.Attributes {
		switch kv.Key {
		case attrDefinition, attrDefVersion, attrEventKind, attrOutcome, attrConflict, attrRedelivery, attrStatus:
			m[kv.Key] = kv.Value.String()
		}
	}
	for _, kv := range l.Attributes {
		m[kv.Key] = kv.Value.String()
	}
	if _, ok := m[attrVersionAfter]; !ok && m[attrOutcome] == outcomeCommitted {
		if before, err := strconv.ParseInt(m[attrVersionBefore], 10, 64); err == nil {
			m[attrVersionAfter] = strconv.FormatInt(before+1, 10)
		}
	}
	return m
}

func attr(kvs []attribute.KeyValue, k attribute.Key) string {
	for _, kv := range kvs {
		if kv.Key == k {
			return kv.Value.String()
		}
	}
	return ""
}

// TestTraceCrossesWorkers follows one trace from a client's send, through a step on worker A that
// emits, to the step that emit causes on worker B, each worker with a tracer provider of its own
// (as on two hosts): the context travels only inside the event. A claims one message at a time,
// so its step is a span in the client's trace; B claims batches, so the step is a link of its
// batch span to A's step.
func TestTraceCrossesWorkers(t *testing.T) {
	h := newHarness(t)
	h.create("a", "b")
	a, b := newTracer(t), newTracer(t)

	// Worker A takes the starts and the send, and stops once a's emit has committed; it claims
	// one message at a time, so b's tick is left for worker B.
	runA, stopA := context.WithCancel(context.Background())
	cfgA := h.config()
	cfgA.Name, cfgA.Concurrency, cfgA.Observer = "A", 1, observe(t, a.tp, nil)
	cfgA.OnCommit = func(exe *stead.Execution, ev stead.Event, _ time.Time) {
		if exe.ID == "a" && ev.Kind == "emit" {
			stopA()
		}
	}
	wA, err := worker.New(cfgA)
	if err != nil {
		t.Fatal(err)
	}
	doneA := make(chan error, 1)
	go func() { doneA <- wA.Run(runA) }()

	ctx, client := a.tp.Tracer("test").Start(context.Background(), "checkout")
	target, _ := json.Marshal("b")
	if _, err := h.client.Send(ctx, "a", stead.Event{ID: "e1", Kind: "emit", Data: target}); err != nil {
		t.Fatal(err)
	}
	client.End()
	select {
	case err := <-doneA:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("worker A did not stop")
	}

	cfgB := h.config()
	cfgB.Name, cfgB.BatchSize, cfgB.Observer = "B", 8, observe(t, b.tp, nil)
	h.start(cfgB)
	eventually(t, 5*time.Second, "b counted the tick", func() bool {
		c, _ := h.counts("b")
		return c.N == 1
	})
	eventually(t, 5*time.Second, "b's batch span ended", func() bool {
		for _, s := range b.exp.GetSpans() {
			for _, l := range s.Links {
				if stepAttrs(s, l)[attrEventKind] == "tick" {
					return true
				}
			}
		}
		return false
	})

	stepA := a.step(t, "a", "emit")
	traceID := client.SpanContext().TraceID()
	if stepA.SpanContext.TraceID() != traceID || stepA.Parent.SpanID() != client.SpanContext().SpanID() {
		t.Fatalf("A's step is in trace %s under %s, want trace %s under the client's span %s",
			stepA.SpanContext.TraceID(), stepA.Parent.SpanID(), traceID, client.SpanContext().SpanID())
	}
	// A's step span holds the step's attributes itself, the version after left off as the
	// version before + 1.
	for k, want := range map[attribute.Key]string{attrExecution: "a", attrEventKind: "emit", attrEventID: "e1",
		attrDefinition: "counter", attrOutcome: outcomeCommitted, attrVersionBefore: "2", attrVersionAfter: "",
		attrStatus: "running"} {
		if got := attr(stepA.Attributes, k); got != want {
			t.Errorf("A's step span has %s = %q, want %q", k, got, want)
		}
	}
	// B claimed in batches: the tick is a link of B's batch span to A's step, with the step's
	// attributes, and the batch's calls are the batch span's children.
	var batch tracetest.SpanStub
	var link trace.Link
	var step map[attribute.Key]string
	for _, s := range b.exp.GetSpans() {
		for _, l := range s.Links {
			if a := stepAttrs(s, l); s.Name == "stead.batch" && a[attrEventKind] == "tick" {
				batch, link, step = s, trace.Link{SpanContext: l.SpanContext, Attributes: l.Attributes}, a
			}
		}
	}
	if batch.Name == "" {
		t.Fatalf("no batch span of B links the tick among %d spans", len(b.exp.GetSpans()))
	}
	if link.SpanContext.TraceID() != traceID || link.SpanContext.SpanID() != stepA.SpanContext.SpanID() || !link.SpanContext.IsRemote() {
		t.Fatalf("B's batch links %s/%s (remote %v), want A's step %s/%s",
			link.SpanContext.TraceID(), link.SpanContext.SpanID(), link.SpanContext.IsRemote(), traceID, stepA.SpanContext.SpanID())
	}
	for k, want := range map[attribute.Key]string{
		attrExecution: "b", attrDefinition: "counter", attrOutcome: outcomeCommitted, attrVersionBefore: "2",
		attrVersionAfter: "3", attrEventID: "from:e1", attrStatus: "running", attrEventKind: "tick",
	} {
		if got := step[k]; got != want {
			t.Errorf("the step has %s = %q, want %q (link %v, batch %v)", k, got, want, link.Attributes, batch.Attributes)
		}
	}
	// The execution and the event are the link's own; the version after, before + 1, is left off.
	if attr(link.Attributes, attrExecution) != "b" || attr(link.Attributes, attrEventID) != "from:e1" ||
		attr(link.Attributes, attrVersionAfter) != "" {
		t.Errorf("the link holds %v, want its execution and event and no version after", link.Attributes)
	}
	var calls []string
	for _, s := range b.exp.GetSpans() {
		if s.Parent.SpanID() == batch.SpanContext.SpanID() {
			calls = append(calls, s.Name)
		}
	}
	for _, want := range []string{"ClaimBatch transport_messages", "LoadForEvents stead_executions", "CommitBatch stead_executions", "AckBatch transport_messages"} {
		if !containsString(calls, want) {
			t.Errorf("the batch's calls are %v, want %q among them", calls, want)
		}
	}
	// A's unbatched step holds its own calls.
	var callsA []string
	for _, s := range a.exp.GetSpans() {
		if s.Parent.SpanID() == stepA.SpanContext.SpanID() {
			callsA = append(callsA, s.Name)
		}
	}
	for _, want := range []string{"ClaimBatch transport_messages", "LoadForEvent stead_executions", "Commit stead_executions", "PublishBatch transport_messages", "AckOutbox stead_outbox", "AckBatch transport_messages"} {
		if !containsString(callsA, want) {
			t.Errorf("A's step calls are %v, want %q among them", callsA, want)
		}
	}
}

// TestTimeoutJoinsTheArmingTrace: a timer armed by a traced step keeps that step's trace context
// in the record, and the timeout the sweeper publishes when it is due is a step in that trace.
func TestTimeoutJoinsTheArmingTrace(t *testing.T) {
	h := newHarness(t)
	tr := newTracer(t)
	cfg := h.config()
	cfg.Observer = observe(t, tr.tp, nil)
	h.start(cfg)
	h.create("t")
	ctx, client := tr.tp.Tracer("test").Start(context.Background(), "arm it")
	if _, err := h.client.Send(ctx, "t", stead.Event{ID: "arm-1", Kind: "arm"}); err != nil {
		t.Fatal(err)
	}
	client.End()
	eventually(t, 5*time.Second, "the timer armed with its trace", func() bool {
		_, exe := h.counts("t")
		return exe.TimerTraces["counting"] != ""
	})
	h.clock.Advance(2 * time.Hour)
	eventually(t, 5*time.Second, "the timeout applied", func() bool {
		c, _ := h.counts("t")
		return c.N == 100
	})
	eventually(t, 5*time.Second, "the timeout's step span", func() bool {
		for _, s := range tr.exp.GetSpans() {
			if s.Name == "stead.step" && attr(s.Attributes, attrEventKind) == chart.KindTimeout {
				return true
			}
		}
		return false
	})
	arm, timeout := tr.step(t, "t", "arm"), tr.step(t, "t", chart.KindTimeout)
	if timeout.SpanContext.TraceID() != client.SpanContext().TraceID() || timeout.Parent.SpanID() != arm.SpanContext.SpanID() {
		t.Fatalf("the timeout's step is in trace %s under %s, want trace %s under the arming step %s",
			timeout.SpanContext.TraceID(), timeout.Parent.SpanID(), client.SpanContext().TraceID(), arm.SpanContext.SpanID())
	}
}

// noSpawns is the store of a worker that dies between a step's commit and the creation of the
// children it spawned: PendingSpawns fails, so the spawn intents stay for a relay.
type noSpawns struct{ stead.Backend }

func (noSpawns) PendingSpawns(context.Context, string, int) ([]stead.SpawnEntry, error) {
	return nil, fmt.Errorf("%w: the worker died after its commit", stead.ErrUnavailable)
}

func (noSpawns) Close() error { return nil } // the real store is the test's

// TestRelayedChildJoinsTheParentTrace: a traced step spawns two children and its worker never
// creates them; another worker's relay does, from the spawn intents alone, and the children's
// start events carry the spawning step's trace context, so what the children send on (here, the
// report to their parent) is a step in the parent's trace.
func TestRelayedChildJoinsTheParentTrace(t *testing.T) {
	h := newHarness(t)
	h.create("p")
	a, b := newTracer(t), newTracer(t)

	forked := make(chan struct{})
	var once sync.Once
	cfgA := h.config()
	cfgA.Name, cfgA.Observer, cfgA.RelayInterval = "A", observe(t, a.tp, nil), -1
	cfgA.Store = stead.NewStore(noSpawns{h.store.Backend()})
	cfgA.OnCommit = func(exe *stead.Execution, ev stead.Event, _ time.Time) {
		if exe.ID == "p" && ev.Kind == "fork" {
			once.Do(func() { close(forked) })
		}
	}
	stopA := h.start(cfgA)
	ctx, client := a.tp.Tracer("test").Start(context.Background(), "fork it")
	if _, err := h.client.Send(ctx, "p", stead.Event{ID: "f1", Kind: "fork"}); err != nil {
		t.Fatal(err)
	}
	client.End()
	select {
	case <-forked:
	case <-time.After(5 * time.Second):
		t.Fatal("the fork did not commit")
	}
	stopA()
	intents, err := h.store.PendingSpawns(context.Background(), "p", 10)
	if err != nil || len(intents) != 2 {
		t.Fatalf("spawn intents after A: %v, %v; want both left for the relay", intents, err)
	}
	fork := a.step(t, "p", "fork")
	if fork.SpanContext.TraceID() != client.SpanContext().TraceID() {
		t.Fatalf("the fork step is in trace %s, want the client's %s", fork.SpanContext.TraceID(), client.SpanContext().TraceID())
	}

	var mu sync.Mutex
	starts := map[string]string{} // child → the trace its start event carried
	cfgB := h.config()
	cfgB.Name, cfgB.Observer = "B", observe(t, b.tp, nil)
	cfgB.OnCommit = func(exe *stead.Execution, ev stead.Event, _ time.Time) {
		if ev.Kind == chart.KindStart && exe.ParentID == "p" {
			mu.Lock()
			starts[exe.ID] = ev.Trace
			mu.Unlock()
		}
	}
	h.start(cfgB) // its recovery at start creates the children
	eventually(t, 5*time.Second, "p joined both children", func() bool {
		c, _ := h.counts("p")
		return c.Joined == 2
	})
	mu.Lock()
	for _, in := range intents {
		sc := trace.SpanContextFromContext(extract(context.Background(), starts[in.ChildID]))
		if sc.TraceID() != fork.SpanContext.TraceID() || sc.SpanID() != fork.SpanContext.SpanID() {
			t.Errorf("the relayed start of %s carried %q, want the fork step's context %s/%s",
				in.ChildID, starts[in.ChildID], fork.SpanContext.TraceID(), fork.SpanContext.SpanID())
		}
	}
	mu.Unlock()
	eventually(t, 5*time.Second, "B's steps of the children's reports", func() bool {
		n := 0
		for _, s := range b.exp.GetSpans() {
			if s.Name == "stead.step" && attr(s.Attributes, attrEventKind) == chart.KindFinished {
				n++
			}
		}
		return n == 2
	})
	for _, s := range b.exp.GetSpans() {
		if s.Name != "stead.step" || attr(s.Attributes, attrEventKind) != chart.KindFinished {
			continue
		}
		if s.SpanContext.TraceID() != client.SpanContext().TraceID() || s.Parent.SpanID() != fork.SpanContext.SpanID() {
			t.Errorf("p's step of %s is in trace %s under %s, want trace %s under the fork step %s",
				attr(s.Attributes, attrEventID), s.SpanContext.TraceID(), s.Parent.SpanID(),
				client.SpanContext().TraceID(), fork.SpanContext.SpanID())
		}
	}
}

func containsString(ss []string, s string) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}

// TestStampKeepsACarriedTrace: an event that carries a trace context keeps it; one without takes
// the span in ctx; without a span nothing is added.
func TestStampKeepsACarriedTrace(t *testing.T) {
	tr := newTracer(t)
	ctx, span := tr.tp.Tracer("test").Start(context.Background(), "s")
	defer span.End()
	const carried = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name string
		ctx  context.Context
		in   string
		want string
	}{
		{"carried", ctx, carried, carried},
		{"from the span", ctx, "", "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"},
		{"no span", context.Background(), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Stamp(tt.ctx, stead.Event{ID: "e", Kind: "k", Trace: tt.in})
			if got.Trace != tt.want {
				t.Fatalf("Trace = %q, want %q", got.Trace, tt.want)
			}
			if err := got.Validate(); err != nil {
				t.Fatalf("a stamped event does not validate: %v", err)
			}
		})
	}
	// What Stamp writes, extract reads back, with its tracestate.
	ts, err := trace.ParseTraceState("congo=t61rcWkgMzE")
	if err != nil {
		t.Fatal(err)
	}
	sc := span.SpanContext().WithTraceState(ts)
	ev := Stamp(trace.ContextWithSpanContext(context.Background(), sc), stead.Event{ID: "e", Kind: "k"})
	back := trace.SpanContextFromContext(extract(context.Background(), ev.Trace))
	if back.TraceID() != sc.TraceID() || back.SpanID() != sc.SpanID() || back.TraceState().String() != "congo=t61rcWkgMzE" || !back.IsRemote() {
		t.Fatalf("%q extracted as %+v", ev.Trace, back)
	}
}

// TestStepMetrics counts steps by outcome, and conflicts, redeliveries and action errors, with a
// manual reader.
func TestStepMetrics(t *testing.T) {
	h := newHarness(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	cfg := h.config()
	cfg.Observer = observe(t, nil, mp)
	h.start(cfg)
	h.create("m")
	h.send("m", "tick", "t1")
	h.send("m", "tick", "t1") // the same event again: dropped by the dedupe ledger
	h.send("m", "boom", "b1") // the machine fails: an action error, retried
	eventually(t, 5*time.Second, "the metrics", func() bool {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		return sum(rm, "stead.steps", outcomeCommitted) >= 2 && sum(rm, "stead.redeliveries", "") >= 1 &&
			sum(rm, "stead.action.errors", "") >= 1 && count(rm, "stead.step.duration") >= 4
	})
}

// sum adds the points of a counter, those of one outcome when outcome is set.
// TestBatchMetricsCountEveryStep: a batched worker adds its step counters once per batch, by
// definition and outcome, and records the duration once per step: the counts still match the
// steps one for one, and every step is one link of its batch's span.
func TestBatchMetricsCountEveryStep(t *testing.T) {
	h := newHarness(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	tr := newTracer(t)
	const executions, ticks = 10, 3
	var ids []string
	for i := range executions {
		ids = append(ids, fmt.Sprintf("m%d", i))
	}
	h.create(ids...)
	for k := range ticks {
		for _, id := range ids {
			h.send(id, "tick", fmt.Sprintf("t%d", k))
		}
	}
	cfg := h.config()
	cfg.BatchSize, cfg.Observer = 64, observe(t, tr.tp, mp)
	h.start(cfg)
	const steps = executions * (1 + ticks) // a start and the ticks each
	var rm metricdata.ResourceMetrics
	eventually(t, 5*time.Second, "every step counted", func() bool {
		rm = metricdata.ResourceMetrics{}
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		return sum(rm, "stead.steps", outcomeCommitted) == steps
	})
	if all, n := sum(rm, "stead.steps", ""), count(rm, "stead.step.duration"); all != steps || n != steps {
		t.Fatalf("stead.steps = %d and stead.step.duration holds %d, want %d each", all, n, steps)
	}
	eventually(t, 5*time.Second, "a link per step", func() bool {
		links := 0
		for _, s := range tr.exp.GetSpans() {
			if s.Name == "stead.batch" {
				links += len(s.Links)
			}
		}
		return links == steps
	})
	for _, s := range tr.exp.GetSpans() {
		for _, l := range s.Links {
			a := stepAttrs(s, l)
			before, _ := strconv.Atoi(a[attrVersionBefore])
			if a[attrOutcome] != outcomeCommitted || a[attrExecution] == "" || a[attrDefinition] != "counter" ||
				a[attrEventID] == "" || a[attrEventKind] == "" || before < 1 || a[attrVersionAfter] != strconv.Itoa(before+1) ||
				a[attrStatus] != string(stead.StatusRunning) || a[attrConflict] != "" || a[attrRedelivery] != "" {
				t.Fatalf("a step reads %v (link %v, batch %v), want a committed step's attributes", a, l.Attributes, s.Attributes)
			}
		}
	}
}

func sum(rm metricdata.ResourceMetrics, name, outcome string) int64 {
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
				for _, p := range s.DataPoints {
					if v, _ := p.Attributes.Value(attrOutcome); outcome == "" || v.AsString() == outcome {
						n += p.Value
					}
				}
			}
		}
	}
	return n
}

// count is how many values a histogram recorded.
func count(rm metricdata.ResourceMetrics, name string) uint64 {
	var n uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if hg, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == name {
				for _, p := range hg.DataPoints {
					n += p.Count
				}
			}
		}
	}
	return n
}

// TestDefinitionVersionAttribute: a versioned definition id is its id and its version.
func TestDefinitionVersionAttribute(t *testing.T) {
	for _, tt := range []struct{ in, id, version string }{
		{"order@3", "order", "3"}, {"order", "order", ""}, {"a@b", "a@b", ""},
	} {
		kvs := appendDefinition(nil, tt.in)
		if attr(kvs, attrDefinition) != tt.id || attr(kvs, attrDefVersion) != tt.version {
			t.Errorf("%q: attributes %v, want id %q version %q", tt.in, kvs, tt.id, tt.version)
		}
	}
}

// TestRemoteReadsAsThePropagator: remote, the batch's reader of Event.Trace, gives what the W3C
// propagator extracts, for valid, future-version and malformed trace contexts alike.
func TestRemoteReadsAsThePropagator(t *testing.T) {
	const tid, sid = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	for _, tr := range []string{
		"",
		"00-" + tid + "-" + sid + "-01",
		"00-" + tid + "-" + sid + "-00",
		"00-" + tid + "-" + sid + "-03",
		"00-" + tid + "-" + sid + "-04", // reserved flag bit in version 0
		"00-" + tid + "-" + sid + "-01;congo=t61rcWkgMzE", // with a tracestate
		"00-" + tid + "-" + sid + "-01;not a tracestate",  // a bad tracestate keeps the traceparent
		"00-" + tid + "-" + sid + "-01-extra",             // version 0 takes no more fields
		"01-" + tid + "-" + sid + "-01-extra",             // a later version may
		"01-" + tid + "-" + sid + "-ff",
		"fe-" + tid + "-" + sid + "-01",
		"ff-" + tid + "-" + sid + "-01", // the invalid version
		"00-" + strings.ToUpper(tid) + "-" + sid + "-01",
		"00-00000000000000000000000000000000-" + sid + "-01",
		"00-" + tid + "-0000000000000000-01",
		"00-" + tid[1:] + "-" + sid + "-01",
		"00-" + tid + "-" + sid + "-1",
		"00-" + tid + "-" + sid,
		"0-" + tid + "-" + sid + "-01",
		"zz-" + tid + "-" + sid + "-01",
		"00-" + tid + "-" + sid + "-0g",
		"00_" + tid + "_" + sid + "_01",
		";congo=t61rcWkgMzE",
		"00-" + tid + "-" + sid + "-0-",       // 55 bytes, the separators elsewhere
		"00-" + tid[:31] + "--" + sid + "-1",  // 55 bytes, a separator inside a field
		"00-" + tid + "-" + sid[:15] + "--01", // 55 bytes
		"0a-" + tid + "-" + sid + "-01",
		"00-" + tid + "-" + sid + "-" + string([]byte{0xff, 0x01}),
	} {
		want := trace.SpanContextFromContext(extract(context.Background(), tr))
		if got := remote(tr); !got.Equal(want) || got.TraceState().String() != want.TraceState().String() {
			t.Errorf("remote(%q) = %+v, the propagator reads %+v", tr, got, want)
		}
	}
}

// TestBatchLinkAttributes: the attributes every step of a batch shares are on the batch span
// once, the rest on each step's link, and the version after only where it is not the version
// before + 1; read back as the package doc says, every step has all of its values.
func TestBatchLinkAttributes(t *testing.T) {
	tr := newTracer(t)
	tel, err := New(Config{TracerProvider: tr.tp})
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tr.tp.Tracer("test").Start(context.Background(), "send")
	carried := inject(ctx)
	span.End()
	type step struct {
		exe, def, kind, outcome string
		before, after           int64
		status                  stead.Status
	}
	run := func(steps []step) (tracetest.SpanStub, []sdktrace.Link) {
		tr.exp.Reset()
		leases := make([]transport.Lease, len(steps))
		for i, s := range steps {
			leases[i].Group, leases[i].Event = s.exe, stead.Event{ID: "ev-" + s.exe, Kind: s.kind, Trace: carried}
		}
		_, obs := tel.Batch(context.Background(), worker.Claim{Leases: leases, Start: time.Now()})
		for i, s := range steps {
			exe := &stead.Execution{ID: s.exe, DefinitionID: s.def, Version: s.before, Status: stead.StatusRunning}
			obs.Loaded(i, exe)
			switch s.outcome {
			case outcomeCommitted:
				obs.Stepped(i, &stead.Bundle{})
				obs.Committed(i, &stead.Execution{ID: s.exe, DefinitionID: s.def, Version: s.after, Status: s.status})
			case outcomeDuplicate:
				obs.Outcome(i, worker.StepDuplicate, nil)
			default:
				obs.Stepped(i, &stead.Bundle{})
				obs.Outcome(i, worker.StepOutcome(s.outcome), nil)
			}
		}
		obs.End()
		for _, sp := range tr.exp.GetSpans() {
			if sp.Name == "stead.batch" {
				return sp, sp.Links
			}
		}
		t.Fatal("no batch span")
		return tracetest.SpanStub{}, nil
	}
	check := func(batch tracetest.SpanStub, links []sdktrace.Link, steps []step) {
		t.Helper()
		if len(links) != len(steps) {
			t.Fatalf("%d links for %d steps", len(links), len(steps))
		}
		for i, s := range steps {
			a := stepAttrs(batch, links[i])
			id, version := chart.SplitVersion(s.def)
			want := map[attribute.Key]string{attrExecution: s.exe, attrEventID: "ev-" + s.exe, attrEventKind: s.kind,
				attrDefinition: id, attrOutcome: s.outcome, attrVersionBefore: strconv.FormatInt(s.before, 10)}
			if version > 0 {
				want[attrDefVersion] = strconv.Itoa(version)
			}
			if s.outcome == outcomeCommitted {
				want[attrVersionAfter], want[attrStatus] = strconv.FormatInt(s.after, 10), string(s.status)
			}
			switch s.outcome {
			case outcomeConflict:
				want[attrConflict] = "true"
			case outcomeDuplicate:
				want[attrRedelivery] = "true"
			}
			if len(a) != len(want) {
				t.Errorf("step %s reads %v, want %v", s.exe, a, want)
			}
			for k, v := range want {
				if a[k] != v {
					t.Errorf("step %s has %s = %q, want %q (link %v, batch %v)", s.exe, k, a[k], v, links[i].Attributes, batch.Attributes)
				}
			}
			if links[i].SpanContext.SpanID() != span.SpanContext().SpanID() || !links[i].SpanContext.IsRemote() {
				t.Errorf("step %s links %v, want the sender's span", s.exe, links[i].SpanContext)
			}
		}
	}

	uniform := []step{
		{"a", "order@2", "tick", outcomeCommitted, 3, 4, stead.StatusRunning},
		{"b", "order@2", "tick", outcomeCommitted, 7, 8, stead.StatusRunning},
	}
	batch, links := run(uniform)
	check(batch, links, uniform)
	for _, l := range links {
		if len(l.Attributes) != 3 {
			t.Errorf("a uniform batch's link holds %v, want only its execution, event and version before", l.Attributes)
		}
	}
	for k, want := range map[attribute.Key]string{attrDefinition: "order", attrDefVersion: "2", attrEventKind: "tick",
		attrOutcome: outcomeCommitted, attrStatus: "running", attrBatchSize: "2"} {
		if got := attr(batch.Attributes, k); got != want {
			t.Errorf("the uniform batch span has %s = %q, want %q", k, got, want)
		}
	}

	mixed := []step{
		{"a", "order@2", "tick", outcomeCommitted, 3, 4, stead.StatusRunning},
		{"b", "order", "pay", outcomeCommitted, 7, 9, stead.StatusDone}, // a version after the reader cannot derive
		{"c", "invoice", "tick", outcomeConflict, 2, 0, ""},
		{"d", "order@2", "tick", outcomeDuplicate, 5, 0, ""},
	}
	batch, links = run(mixed)
	check(batch, links, mixed)
	for _, k := range []attribute.Key{attrDefinition, attrDefVersion, attrEventKind, attrOutcome, attrStatus, attrConflict, attrRedelivery} {
		if got := attr(batch.Attributes, k); got != "" {
			t.Errorf("the mixed batch span has %s = %q, want it on the links", k, got)
		}
	}
	if attr(links[0].Attributes, attrVersionAfter) != "" || attr(links[1].Attributes, attrVersionAfter) != "9" {
		t.Errorf("version after on the links: %v, %v; want none (before + 1), then 9", links[0].Attributes, links[1].Attributes)
	}
}
