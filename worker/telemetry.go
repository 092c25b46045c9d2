package worker

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/transport"
)

// scope is the instrumentation scope of every span and instrument the worker makes.
const scope = "github.com/steadhq/stead/worker"

// The attributes of a step span and of the step metrics. Names follow the OpenTelemetry semantic
// conventions where one exists (db.*, error.type) and are stead.* otherwise.
const (
	attrExecution     = attribute.Key("stead.execution.id")
	attrDefinition    = attribute.Key("stead.definition.id")
	attrDefVersion    = attribute.Key("stead.definition.version")
	attrEventID       = attribute.Key("stead.event.id")
	attrEventKind     = attribute.Key("stead.event.kind")
	attrVersionBefore = attribute.Key("stead.execution.version.before")
	attrVersionAfter  = attribute.Key("stead.execution.version.after")
	attrStatus        = attribute.Key("stead.execution.status")
	attrOutcome       = attribute.Key("stead.step.outcome")
	attrConflict      = attribute.Key("stead.step.conflict")
	attrRedelivery    = attribute.Key("stead.step.redelivery")
	attrPriority      = attribute.Key("stead.priority")
	attrBatchSize     = attribute.Key("stead.batch.size")
)

// The outcomes of a claimed message, the values of stead.step.outcome.
const (
	outcomeCommitted   = "committed"    // the step committed
	outcomeConflict    = "conflict"     // it lost the compare-and-swap and is redelivered at once
	outcomeDuplicate   = "duplicate"    // the execution had applied the event already (a redelivery)
	outcomeDropped     = "dropped"      // nothing to do: no such execution, cancelled, not started …
	outcomeParked      = "parked"       // the execution is suspended
	outcomeActionError = "action_error" // the machine failed; retried after RetryDelay
	outcomeRetry       = "retry"        // the store failed; retried after RetryDelay
	// outcomeDeferred: claimed behind a message of its execution that was not applied in this
	// batch, and handed back with it, in order
	outcomeDeferred = "deferred"
)

// telemetry is the worker's instrumentation: nothing at all unless Config gives a provider.
// Every method is safe on a telemetry with neither, and then costs a branch.
type telemetry struct {
	tracing, metering bool
	tracer            trace.Tracer
	meter             metric.Meter

	steps        metric.Int64Counter
	stepDuration metric.Float64Histogram
	conflicts    metric.Int64Counter
	redeliveries metric.Int64Counter
	actionErrors metric.Int64Counter
	lateness     metric.Float64Histogram

	storeDB, transportDB attribute.KeyValue // db.system.name of each, when the backend tells

	sets  sync.Map  // stepKey → *stepSet: one attribute set per definition and outcome
	calls sync.Map  // callKey → *callSpan
	lists sync.Pool // *stepObsList: the observations of ended batches, for the next ones
}

type stepKey struct{ definition, outcome string }

// DBSystemNamer is what a backend implements to name its database in spans (the semantic
// conventions' db.system.name: "postgresql", "sqlite"). It is optional: without it the worker's
// store and transport spans carry no db.system.name.
type DBSystemNamer interface {
	DBSystemName() string
}

func newTelemetry(cfg Config) (*telemetry, error) {
	t := &telemetry{}
	if cfg.TracerProvider != nil {
		t.tracing = true
		t.tracer = cfg.TracerProvider.Tracer(scope)
	}
	t.storeDB = dbSystem(cfg.Store.Backend())
	t.transportDB = dbSystem(cfg.Transport.Backend())
	if cfg.SharedTx != nil {
		t.storeDB = dbSystem(cfg.SharedTx)
		t.transportDB = t.storeDB
	}
	if cfg.MeterProvider == nil {
		return t, nil
	}
	t.metering = true
	m := cfg.MeterProvider.Meter(scope)
	t.meter = m
	var err error
	if t.steps, err = m.Int64Counter("stead.steps", metric.WithUnit("{step}"),
		metric.WithDescription("Messages a worker handled, by definition and outcome.")); err != nil {
		return nil, err
	}
	if t.stepDuration, err = m.Float64Histogram("stead.step.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from the claim of a message to its acknowledgement or hand-back."),
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)); err != nil {
		return nil, err
	}
	if t.conflicts, err = m.Int64Counter("stead.conflicts", metric.WithUnit("{conflict}"),
		metric.WithDescription("Steps that lost the version compare-and-swap and were redelivered.")); err != nil {
		return nil, err
	}
	if t.redeliveries, err = m.Int64Counter("stead.redeliveries", metric.WithUnit("{message}"),
		metric.WithDescription("Messages whose event the execution had applied already, dropped by the dedupe ledger.")); err != nil {
		return nil, err
	}
	if t.actionErrors, err = m.Int64Counter("stead.action.errors", metric.WithUnit("{error}"),
		metric.WithDescription("Steps whose machine returned an error or panicked.")); err != nil {
		return nil, err
	}
	if t.lateness, err = m.Float64Histogram("stead.timer.lateness", metric.WithUnit("s"),
		metric.WithDescription("How long after its fire time a due timer was published."),
		metric.WithExplicitBucketBoundaries(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)); err != nil {
		return nil, err
	}
	return t, nil
}

func dbSystem(v any) attribute.KeyValue {
	if n, ok := v.(DBSystemNamer); ok && n.DBSystemName() != "" {
		return semconv.DBSystemNameKey.String(n.DBSystemName())
	}
	return attribute.KeyValue{}
}

// on reports whether anything is recorded at all.
func (t *telemetry) on() bool { return t.tracing || t.metering }

// now is the start of a claim, read only when something will use it.
func (t *telemetry) now() time.Time {
	if t.on() {
		return time.Now()
	}
	return time.Time{}
}

// ---- trace context carried by events ----

// traceContext is the W3C propagator: Event.Trace holds its two headers as "traceparent" or
// "traceparent;tracestate" (a traceparent never contains ';').
var traceContext propagation.TraceContext

// carrier adapts Event.Trace to the propagator.
type carrier struct{ parent, state string }

func (c *carrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.parent
	case "tracestate":
		return c.state
	}
	return ""
}

func (c *carrier) Set(key, value string) {
	switch key {
	case "traceparent":
		c.parent = value
	case "tracestate":
		c.state = value
	}
}

func (c *carrier) Keys() []string { return []string{"traceparent", "tracestate"} }

// extract returns ctx with the remote span context ev carries, if any.
func extract(ctx context.Context, tr string) context.Context {
	if tr == "" {
		return ctx
	}
	p, s, _ := strings.Cut(tr, ";")
	return traceContext.Extract(ctx, &carrier{parent: p, state: s})
}

// remote returns the span context an Event.Trace carries, read exactly as the W3C propagator
// reads it (traceContext.Extract; a test holds the two to the same answers), without the context
// the propagator wraps it in: a batch reads one per message, and a context is an allocation.
// What the propagator refuses is the zero SpanContext.
func remote(tr string) trace.SpanContext {
	if tr == "" {
		return trace.SpanContext{}
	}
	h, state, _ := strings.Cut(tr, ";")
	var ver, flags [1]byte
	var scc trace.SpanContextConfig
	if len(h) == 55 && h[2] == '-' && h[35] == '-' && h[52] == '-' {
		// The one layout every traceparent written today has ("00-" trace "-" span "-" flags):
		// the same fields and checks as below, without looking for the separators.
		if !unhexTo(ver[:], h[:2]) || ver[0] > 254 || !unhexTo(scc.TraceID[:], h[3:35]) ||
			!unhexTo(scc.SpanID[:], h[36:52]) || !unhexTo(flags[:], h[53:]) || ver[0] == 0 && flags[0] > 3 {
			return trace.SpanContext{}
		}
	} else if !hexPart(ver[:], &h) || ver[0] > 254 || !hexPart(scc.TraceID[:], &h) || !hexPart(scc.SpanID[:], &h) ||
		!hexPart(flags[:], &h) || ver[0] == 0 && (h != "" || flags[0] > 3) {
		return trace.SpanContext{}
	}
	scc.TraceFlags = trace.TraceFlags(flags[0]) & (trace.FlagsSampled | trace.FlagsRandom)
	scc.TraceState, _ = trace.ParseTraceState(state) // a bad tracestate leaves the traceparent valid
	scc.Remote = true
	if sc := trace.NewSpanContext(scc); sc.IsValid() {
		return sc
	}
	return trace.SpanContext{}
}

// hexPart decodes the next '-'-separated field of *h into dst, advancing *h past it: it must be
// exactly 2*len(dst) lower-case hex digits.
func hexPart(dst []byte, h *string) bool {
	part, rest, _ := strings.Cut(*h, "-")
	*h = rest
	return len(part) == 2*len(dst) && unhexTo(dst, part)
}

// unhexTo decodes the 2*len(dst) lower-case hex digits of src into dst.
func unhexTo(dst []byte, src string) bool {
	bad := byte(0)
	for i := range dst {
		hi, lo := unhex[src[2*i]], unhex[src[2*i+1]]
		dst[i] = hi<<4 | lo
		bad |= hi | lo
	}
	return bad&0xf0 == 0
}

// unhex maps a lower-case hex digit to its value and anything else to 0xff.
var unhex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c - '0'
	}
	for c := byte('a'); c <= 'f'; c++ {
		t[c] = c - 'a' + 10
	}
	return t
}()

// inject returns the Event.Trace of the span in ctx, or "" when there is none.
func inject(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	var c carrier
	traceContext.Inject(ctx, &c)
	if c.state == "" || len(c.parent)+1+len(c.state) > stead.MaxTraceLen {
		return c.parent
	}
	return c.parent + ";" + c.state
}

// Stamp returns ev carrying the trace context of the span in ctx, unless it carries one already
// or ctx holds no span. Client.Send and Client.Create stamp what they send; a worker stamps what
// its steps emit.
func Stamp(ctx context.Context, ev stead.Event) stead.Event {
	if ev.Trace == "" {
		ev.Trace = inject(ctx)
	}
	return ev
}

// ---- a step ----

// stepObs follows one claimed message from its claim to its settlement. The zero value (the
// telemetry is off) records nothing.
//
// Unbatched, a message is a "stead.step" span of its own, a child of the trace context its event
// carries. Batched, it is a link of its batch's span to that context, with the step's attributes
// on the link: a span per step cost four times what a link does (3.8 µs against 0.9 µs with the
// SDK, measured with sdk/trace's batcher); bench/results/telemetry.md has what either costs a
// worker.
type stepObs struct {
	t          *telemetry
	ctx        context.Context  // the step span's context (unbatched), for the step's calls
	span       trace.Span       // unbatched only
	lease      *transport.Lease // batched and recorded: the message, for its link
	start      time.Time
	definition string
	outcome    string
	before     int64
	after      int64
	status     stead.Status
	trace      string // the Event.Trace to stamp on what the step sends
	err        error  // what kept the step from committing, for its span (unbatched)
}

// off reports whether o records nothing (nil, or the telemetry is off).
func (o *stepObs) off() bool { return o == nil || o.t == nil }

// begin starts the observation of a message claimed alone: its step span is a child of the trace
// context the event carries (so that one order's life is one trace across hosts) and starts at
// the claim.
func (t *telemetry) begin(ctx context.Context, l *transport.Lease, claimStart time.Time) stepObs {
	if !t.on() {
		return stepObs{ctx: ctx}
	}
	o := stepObs{t: t, ctx: ctx, start: claimStart, outcome: outcomeDropped}
	if !t.tracing {
		return o
	}
	o.ctx, o.span = t.tracer.Start(extract(ctx, l.Event.Trace), "stead.step",
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(claimStart),
		trace.WithAttributes(attrExecution.String(l.Group), attrEventID.String(l.Event.ID),
			attrEventKind.String(l.Event.Kind)))
	return o
}

// claimed records the claim that handed out this message alone (unbatched) as a child span,
// ending now.
func (o *stepObs) claimed() {
	if o.off() || o.span == nil {
		return
	}
	o.t.dbSpan(o.ctx, "ClaimBatch", "transport_messages", o.t.transportDB, 1, o.start, time.Now())
}

// loaded records what the store returned for the message.
func (o *stepObs) loaded(exe *stead.Execution, processed bool, v verdict) {
	if o.off() {
		return
	}
	switch {
	case processed:
		o.outcome = outcomeDuplicate
	case v == doPark:
		o.outcome = outcomeParked
	case v == doAck:
		o.outcome = outcomeDropped
	}
	if exe != nil {
		o.definition, o.before, o.status = exe.DefinitionID, exe.Version, exe.Status
	}
}

// stepped records a successful step and stamps what it emits and spawns with the step's trace
// context (keepTimerTraces gives the same context to the timers it arms).
func (o *stepObs) stepped(b *stead.Bundle) {
	if o.off() {
		return
	}
	o.outcome = outcomeCommitted // until the commit says otherwise
	if !o.t.tracing || len(b.Emits) == 0 && len(b.Spawns) == 0 && len(b.Timers) == 0 {
		return
	}
	if o.span != nil {
		o.trace = inject(o.ctx)
	}
	stampBundle(b, o.trace)
}

// stampBundle gives the trace context tr to every emit and spawn of b that carries none: the
// spawn intent keeps it, so that the child's start event carries it whoever creates the child.
func stampBundle(b *stead.Bundle, tr string) {
	if tr == "" {
		return
	}
	for i := range b.Emits {
		if b.Emits[i].Event.Trace == "" {
			b.Emits[i].Event.Trace = tr
		}
	}
	for i := range b.Spawns {
		if b.Spawns[i].Trace == "" {
			b.Spawns[i].Trace = tr
		}
	}
}

// fail records what kept the step from committing, for its span.
func (o *stepObs) fail(err error) {
	if !o.off() {
		o.err = err
	}
}

// set records the outcome of the message.
func (o *stepObs) set(outcome string) {
	if !o.off() {
		o.outcome = outcome
	}
}

// committed records the version and status the step committed.
func (o *stepObs) committed(exe *stead.Execution) {
	if o.off() {
		return
	}
	o.outcome, o.after, o.status = outcomeCommitted, exe.Version, exe.Status
}

// end closes the step span and counts the step.
func (o *stepObs) end(err error) {
	if o.off() {
		return
	}
	now := time.Now()
	if o.span != nil {
		var buf [8]attribute.KeyValue
		kvs := appendDefinition(buf[:0], o.definition)
		kvs = o.appendOutcome(kvs)
		kvs = o.appendVersions(kvs, true)
		o.span.SetAttributes(kvs...)
		if err != nil {
			o.span.RecordError(err)
			o.span.SetStatus(codes.Error, o.outcome)
		}
		o.span.End(trace.WithTimestamp(now))
	}
	o.count(now)
}

// appendOutcome appends the step's outcome and, set only when true, its conflict or redelivery
// flag: an attribute costs the SDK about as much as a tenth of a span.
func (o *stepObs) appendOutcome(kvs []attribute.KeyValue) []attribute.KeyValue {
	kvs = append(kvs, attrOutcome.String(o.outcome))
	switch o.outcome {
	case outcomeConflict:
		kvs = append(kvs, attrConflict.Bool(true))
	case outcomeDuplicate:
		kvs = append(kvs, attrRedelivery.Bool(true))
	}
	return kvs
}

// outcomeAttributes is how many attributes appendOutcome appends.
func (o *stepObs) outcomeAttributes() int {
	if o.outcome == outcomeConflict || o.outcome == outcomeDuplicate {
		return 2
	}
	return 1
}

// appendVersions appends the version the execution was loaded at and, for a committed step, the
// version it committed when that is not the version before + 1 (a store commits at exactly that:
// stead.Store.Commit), and the status it committed when status says so.
func (o *stepObs) appendVersions(kvs []attribute.KeyValue, status bool) []attribute.KeyValue {
	kvs = append(kvs, attrVersionBefore.Int64(o.before))
	if o.outcome != outcomeCommitted {
		return kvs
	}
	if o.after != o.before+1 {
		kvs = append(kvs, attrVersionAfter.Int64(o.after))
	}
	if status {
		kvs = append(kvs, attrStatus.String(string(o.status)))
	}
	return kvs
}

// versionAttributes is how many attributes appendVersions appends.
func (o *stepObs) versionAttributes(status bool) int {
	n := 1
	if o.outcome == outcomeCommitted {
		if o.after != o.before+1 {
			n++
		}
		if status {
			n++
		}
	}
	return n
}

// definitionAttributes is how many attributes appendDefinition appends for definitionID.
func definitionAttributes(definitionID string) int {
	if _, version := chart.SplitVersion(definitionID); version > 0 {
		return 2
	}
	return 1
}

// count records the step's metrics.
func (o *stepObs) count(now time.Time) {
	if o.t.metering {
		o.t.record(o.definition, o.outcome, 1, now.Sub(o.start).Seconds())
	}
}

// record counts n steps of one definition and outcome that each took d seconds.
func (t *telemetry) record(definition, outcome string, n int, d float64) {
	set := t.attrs(definition, outcome)
	ctx := context.Background()
	t.steps.Add(ctx, int64(n), set.add...)
	for range n {
		t.stepDuration.Record(ctx, d, set.record...) // a histogram takes no weight: one record per step
	}
	switch outcome {
	case outcomeConflict:
		t.conflicts.Add(ctx, int64(n), set.add...)
	case outcomeDuplicate:
		t.redeliveries.Add(ctx, int64(n), set.add...)
	case outcomeActionError:
		t.actionErrors.Add(ctx, int64(n), set.add...)
	}
}

// stepSet is the attribute set of a definition and an outcome, as the options the instruments
// take: passed on as slices, so that a measurement allocates no variadic slice of its own.
type stepSet struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

// attrs returns the measurement options of a definition and an outcome, made once: building an
// attribute set per step would cost an allocation and a sort on every step.
func (t *telemetry) attrs(definition, outcome string) *stepSet {
	k := stepKey{definition, outcome}
	if v, ok := t.sets.Load(k); ok {
		return v.(*stepSet)
	}
	kvs := appendDefinition(make([]attribute.KeyValue, 0, 3), definition)
	opt := metric.WithAttributeSet(attribute.NewSet(append(kvs, attrOutcome.String(outcome))...))
	v, _ := t.sets.LoadOrStore(k, &stepSet{add: []metric.AddOption{opt}, record: []metric.RecordOption{opt}})
	return v.(*stepSet)
}

// appendDefinition appends the definition's id and, for a versioned one ("order@3"), its version.
func appendDefinition(kvs []attribute.KeyValue, definitionID string) []attribute.KeyValue {
	id, version := chart.SplitVersion(definitionID)
	kvs = append(kvs, attrDefinition.String(id))
	if version > 0 {
		kvs = append(kvs, attrDefVersion.Int(version))
	}
	return kvs
}

// ---- batches and database calls ----

// batch starts the span of one batch (its claim, load, commit, relay and acks are its children)
// and records its claim. It returns ctx unchanged and a nil span when tracing is off.
func (t *telemetry) batch(ctx context.Context, claimStart time.Time, n int) (context.Context, trace.Span) {
	if !t.tracing {
		return ctx, nil
	}
	ctx, span := t.tracer.Start(ctx, "stead.batch", trace.WithTimestamp(claimStart),
		trace.WithAttributes(attrBatchSize.Int(n)))
	t.dbSpan(ctx, "ClaimBatch", "transport_messages", t.transportDB, n, claimStart, time.Now())
	return ctx, span
}

// dbSpan records a finished database call as a client span.
func (t *telemetry) dbSpan(ctx context.Context, op, collection string, system attribute.KeyValue, n int, start, end time.Time) {
	_, span := t.startDB(ctx, op, collection, system, n, start)
	span.End(trace.WithTimestamp(end))
}

func (t *telemetry) startDB(ctx context.Context, op, collection string, system attribute.KeyValue, n int, start time.Time) (context.Context, trace.Span) {
	c := t.call(op, collection, system)
	opts := c.opts
	if n > 1 || !start.IsZero() {
		opts = slices.Clip(opts)
		if n > 1 {
			opts = append(opts, trace.WithAttributes(semconv.DBOperationBatchSize(n)))
		}
		if !start.IsZero() {
			opts = append(opts, trace.WithTimestamp(start))
		}
	}
	return t.tracer.Start(ctx, c.name, opts...)
}

// callKey is a kind of database call; callSpan is what its spans share, made once: the name and
// the start options (the kind, db.operation.name, db.collection.name and db.system.name), so that
// a call allocates neither.
type callKey struct{ op, collection, system string }

type callSpan struct {
	name string
	opts []trace.SpanStartOption
}

func (t *telemetry) call(op, collection string, system attribute.KeyValue) *callSpan {
	k := callKey{op, collection, system.Value.AsString()}
	if v, ok := t.calls.Load(k); ok {
		return v.(*callSpan)
	}
	attrs := []attribute.KeyValue{semconv.DBOperationName(op), semconv.DBCollectionName(collection)}
	if system.Valid() {
		attrs = append(attrs, system)
	}
	c := &callSpan{name: op + " " + collection,
		opts: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)}}
	v, _ := t.calls.LoadOrStore(k, c)
	return v.(*callSpan)
}

// store starts the span of a store call; done ends it. Off, it returns ctx and a nil span.
func (t *telemetry) store(ctx context.Context, op, collection string, n int) (context.Context, trace.Span) {
	if !t.tracing {
		return ctx, nil
	}
	return t.startDB(ctx, op, collection, t.storeDB, n, time.Time{})
}

// transport is store for a transport call.
func (t *telemetry) transport(ctx context.Context, op string, n int) (context.Context, trace.Span) {
	if !t.tracing {
		return ctx, nil
	}
	return t.startDB(ctx, op, "transport_messages", t.transportDB, n, time.Time{})
}

// endSpan ends a span that store or transport started, with the call's error.
func endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(semconv.ErrorTypeOther)
	}
	span.End()
}

// carry returns to with the span of from, so that work done on to's deadline (after a
// transaction's own has passed) still hangs off from's span.
func (t *telemetry) carry(to, from context.Context) context.Context {
	if !t.tracing {
		return to
	}
	return trace.ContextWithSpan(to, trace.SpanFromContext(from))
}

// timerFired records how late a due timer was published.
func (t *telemetry) timerFired(now, fireAt time.Time) {
	if t.metering {
		t.lateness.Record(context.Background(), max(now.Sub(fireAt), 0).Seconds())
	}
}

// traceOf returns the Event.Trace of the step span ("" untraced), nil-safe.
func (o *stepObs) traceOf() string {
	if o == nil {
		return ""
	}
	return o.trace
}

// stepObsList is the observations of a batch's messages, aligned with its leases; nil when the
// telemetry is off, and then every method records nothing.
type stepObsList []stepObs

// at returns the observation of lease i, or nil.
func (s stepObsList) at(i int) *stepObs {
	if i < 0 || i >= len(s) {
		return nil
	}
	return &s[i]
}

// setAll records one outcome for every message of the batch.
func (s stepObsList) setAll(outcome string) {
	for i := range s {
		s[i].set(outcome)
	}
}

// fail records err on every message of the batch.
func (s stepObsList) fail(err error) {
	for i := range s {
		s[i].fail(err)
	}
}

// end counts every step of the batch, links each to the batch's span with its attributes, and
// ends the span. The links are built only when the span records (a sampler may drop the batch).
// The steps' counters are added once per definition and outcome, as every step of a batch has
// the same start and end.
func (s stepObsList) end(batch trace.Span) {
	if len(s) == 0 || s[0].off() {
		return
	}
	if s[0].span != nil { // a message claimed alone: its own step span, no batch
		s[0].end(s[0].err)
		s[0].t.reuse(s)
		return
	}
	t := s[0].t
	now := time.Now()
	if batch != nil && batch.IsRecording() {
		s.link(batch)
	}
	if batch != nil {
		batch.End(trace.WithTimestamp(now))
	}
	if t.metering {
		s.count(now)
	}
	t.reuse(s)
}

// link adds a link per step to the batch span: to the trace context its event carries (the step
// that sent it), with the step's attributes. What every step of the batch shares — the
// definition, the event kind, the outcome (with its flag) and the committed status — is set once
// on the batch span instead of on each link; the version after is left off where it is the
// version before + 1 (see appendVersions). The links' attributes are one allocation for the
// batch, sized exactly: the SDK keeps the slices it is given.
func (s stepObsList) link(batch trace.Span) {
	first := &s[0]
	def, kind, outcome := true, true, true // shared by every step
	for i := 1; i < len(s); i++ {
		o := &s[i]
		def = def && o.definition == first.definition
		kind = kind && o.lease.Event.Kind == first.lease.Event.Kind
		outcome = outcome && o.outcome == first.outcome
	}
	status := outcome && first.outcome == outcomeCommitted
	for i := 1; status && i < len(s); i++ {
		status = s[i].status == first.status
	}
	var shared [6]attribute.KeyValue
	kvs := shared[:0]
	if def {
		kvs = appendDefinition(kvs, first.definition)
	}
	if kind {
		kvs = append(kvs, attrEventKind.String(first.lease.Event.Kind))
	}
	if outcome {
		kvs = first.appendOutcome(kvs)
	}
	if status {
		kvs = append(kvs, attrStatus.String(string(first.status)))
	}
	if len(kvs) > 0 {
		batch.SetAttributes(kvs...)
	}
	n := 0
	for i := range s {
		o := &s[i]
		n += 2 + o.versionAttributes(!status) // execution, event id, versions
		if !def {
			n += definitionAttributes(o.definition)
		}
		if !kind {
			n++
		}
		if !outcome {
			n += o.outcomeAttributes()
		}
	}
	all := make([]attribute.KeyValue, 0, n)
	for i := range s {
		o := &s[i]
		start := len(all)
		all = append(all, attrExecution.String(o.lease.Group), attrEventID.String(o.lease.Event.ID))
		if !kind {
			all = append(all, attrEventKind.String(o.lease.Event.Kind))
		}
		if !def {
			all = appendDefinition(all, o.definition)
		}
		if !outcome {
			all = o.appendOutcome(all)
		}
		all = o.appendVersions(all, !status)
		batch.AddLink(trace.Link{SpanContext: remote(o.lease.Event.Trace), Attributes: all[start:len(all):len(all)]})
	}
}

// count records the metrics of the batch's steps: the counters once per definition and outcome,
// the duration once per step (a histogram takes no weight), all the same as the steps of a batch
// share their claim and their end.
func (s stepObsList) count(now time.Time) {
	type group struct {
		definition, outcome string
		n                   int
	}
	var buf [4]group
	groups := buf[:0]
	for i := range s {
		o := &s[i]
		k := 0
		for k < len(groups) && (groups[k].definition != o.definition || groups[k].outcome != o.outcome) {
			k++
		}
		if k == len(groups) {
			groups = append(groups, group{definition: o.definition, outcome: o.outcome})
		}
		groups[k].n++
	}
	d := now.Sub(s[0].start).Seconds()
	for _, g := range groups {
		s[0].t.record(g.definition, g.outcome, g.n, d)
	}
}

// reuse keeps the observations of an ended batch for a later one: a batch of 64 holds about
// 10 KB of them, which the next batch would otherwise allocate and the collector sweep again.
func (t *telemetry) reuse(s stepObsList) {
	clear(s) // drop the references to the leases and strings of the batch
	t.lists.Put(&s)
}

// beginBatch starts the batch span, a root whose links are its messages: each links the trace
// context its event carries (the step that sent it) and holds the step's attributes, and what
// the steps send carries the batch span's context on. It returns ctx with the batch span, to hang
// the batch's store and transport calls from. leases must stay as they are until the list ends.
//
// A message claimed alone by an unbatched worker (alone) gets a step span of its own instead,
// a child of the trace context its event carries (begin), with its calls hanging from it.
func (t *telemetry) beginBatch(ctx context.Context, leases []transport.Lease, claimStart time.Time, alone bool) (context.Context, stepObsList, trace.Span) {
	if !t.on() {
		return ctx, nil, nil
	}
	if alone && len(leases) == 1 {
		obs := t.list(1)
		obs[0] = t.begin(ctx, &leases[0], claimStart)
		obs[0].claimed()
		return obs[0].ctx, obs, nil
	}
	bctx, span := t.batch(ctx, claimStart, len(leases))
	carried := ""
	if span != nil {
		carried = inject(bctx)
	}
	linked := span != nil && span.IsRecording()
	obs := t.list(len(leases))
	for i := range leases {
		obs[i] = stepObs{t: t, start: claimStart, outcome: outcomeDropped, trace: carried}
		if linked {
			obs[i].lease = &leases[i]
		}
	}
	return bctx, obs, span
}

// list returns a list of n observations, reused from an ended batch when one is large enough.
func (t *telemetry) list(n int) stepObsList {
	if p, _ := t.lists.Get().(*stepObsList); p != nil && cap(*p) >= n {
		return (*p)[:n]
	}
	return make(stepObsList, n)
}

// keepTimerTraces records on next, the execution a step returned, the trace context tr of that
// step (empty when untraced) for each timer the step arms, and forgets it for each timer the
// step disarms and for all of them once the execution is finished, so that a timeout joins the
// trace of the step that armed it. It follows the bundle's timer ops, which every Machine
// returns, not Execution.Timers, which a Machine need not keep. The map is copied before it
// changes: a machine may share it with the execution it was given.
func keepTimerTraces(next *stead.Execution, b *stead.Bundle, tr string) {
	if tr == "" && len(next.TimerTraces) == 0 {
		return
	}
	if next.Status.Finished() {
		next.TimerTraces = nil
		return
	}
	var m map[string]string
	edit := func() map[string]string {
		if m == nil {
			m = maps.Clone(next.TimerTraces)
			if m == nil {
				m = map[string]string{}
			}
		}
		return m
	}
	for _, op := range b.Timers {
		_, had := next.TimerTraces[op.Path]
		switch {
		case op.Action == stead.TimerSchedule && tr != "":
			edit()[op.Path] = tr
		case had || m != nil:
			delete(edit(), op.Path) // disarmed, or re-armed by an untraced step
		}
	}
	if m != nil {
		if len(m) == 0 {
			m = nil
		}
		next.TimerTraces = m
	}
}
