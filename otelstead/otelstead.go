package otelstead

import (
	"context"
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
	"github.com/steadhq/stead/worker"
)

// scope is the instrumentation scope of every span and instrument: the worker's package, where
// they were made before this package held them, so that what reads them by scope still finds them.
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
	outcomeCommitted   = string(worker.StepCommitted)
	outcomeConflict    = string(worker.StepConflict)
	outcomeDuplicate   = string(worker.StepDuplicate)
	outcomeDropped     = string(worker.StepDropped)
	outcomeActionError = string(worker.StepActionError)
)

// Observer is the OpenTelemetry worker.Observer: give it to worker.Config.Observer, and to
// worker.Client.Stamper. It records nothing of what Config gives no provider for.
type Observer struct {
	tracing, metering bool
	tracer            trace.Tracer
	meter             metric.Meter

	steps        metric.Int64Counter
	stepDuration metric.Float64Histogram
	conflicts    metric.Int64Counter
	redeliveries metric.Int64Counter
	actionErrors metric.Int64Counter
	lateness     metric.Float64Histogram

	statsInterval time.Duration

	sets  sync.Map  // stepKey → *stepSet: one attribute set per definition and outcome
	calls sync.Map  // callKey → *callSpan
	lists sync.Pool // *batchObs: the observations of ended batches, for the next ones
}

type stepKey struct{ definition, outcome string }

var (
	_ worker.Observer = (*Observer)(nil)
	_ worker.Stamper  = (*Observer)(nil)
)

// Config is what an Observer records to.
type Config struct {
	// TracerProvider, when set, traces every claimed message: claimed alone (an unbatched
	// worker), as a "stead.step" span, a child of the trace context its event carries
	// (Event.Trace); in a batch, as a link of the batch's "stead.batch" span to that context.
	// The store and transport calls are client spans under them; what a step emits carries the
	// step's context on. Nil: no spans.
	TracerProvider trace.TracerProvider
	// MeterProvider, when set, records the stead.* step, conflict, redelivery, action error and
	// timer lateness metrics, and the gauges of queue depth, backlog and execution counts that
	// the backends can report (stead.StatsBackend, transport.StatsBackend). Nil: no metrics.
	MeterProvider metric.MeterProvider
	// StatsInterval is how often at most the gauges query the backends (default
	// DefaultStatsInterval); a scrape in between reads the last answer.
	StatsInterval time.Duration
}

// DefaultStatsInterval is Config.StatsInterval's default.
const DefaultStatsInterval = 30 * time.Second

// New returns the Observer of cfg's providers.
func New(cfg Config) (*Observer, error) {
	t := &Observer{statsInterval: cfg.StatsInterval}
	if t.statsInterval <= 0 {
		t.statsInterval = DefaultStatsInterval
	}
	if cfg.TracerProvider != nil {
		t.tracing = true
		t.tracer = cfg.TracerProvider.Tracer(scope)
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

// on reports whether anything is recorded at all.
func (t *Observer) on() bool { return t.tracing || t.metering }

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
// or ctx holds no span: for an event sent other than through a worker.Client whose Stamper is an
// Observer (which stamps what Send and Create send the same way).
func Stamp(ctx context.Context, ev stead.Event) stead.Event {
	if ev.Trace == "" {
		ev.Trace = inject(ctx)
	}
	return ev
}

// Trace returns the Event.Trace of the span in ctx, "" when there is none: an Observer is the
// worker.Stamper of a Client.
func (t *Observer) Trace(ctx context.Context) string { return inject(ctx) }

// ---- a step ----

// stepObs follows one claimed message from its claim to its settlement.
//
// Unbatched, a message is a "stead.step" span of its own, a child of the trace context its event
// carries. Batched, it is a link of its batch's span to that context, with the step's attributes
// on the link: a span per step cost four times what a link does (3.8 µs against 0.9 µs with the
// SDK, measured with sdk/trace's batcher); bench/results/telemetry.md has what either costs a
// worker.
type stepObs struct {
	t          *Observer
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

// begin starts the observation of a message claimed alone: its step span is a child of the trace
// context the event carries (so that one order's life is one trace across hosts) and starts at
// the claim.
func (t *Observer) begin(ctx context.Context, l *transport.Lease, claimStart time.Time) stepObs {
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
func (o *stepObs) claimed(db string) {
	if o.span == nil {
		return
	}
	o.t.dbSpan(o.ctx, "ClaimBatch", "transport_messages", db, 1, o.start, time.Now())
}

// loaded records the execution the message was loaded to.
func (o *stepObs) loaded(exe *stead.Execution) {
	if exe != nil {
		o.definition, o.before, o.status = exe.DefinitionID, exe.Version, exe.Status
	}
}

// stepped records a successful step and returns the trace context to stamp on what it emits and
// spawns and keep for the timers it arms: an unbatched step's own, a batched one's the batch's.
func (o *stepObs) stepped(b *stead.Bundle) string {
	o.outcome = outcomeCommitted // until the commit says otherwise
	if o.span != nil && o.trace == "" && (len(b.Emits) > 0 || len(b.Spawns) > 0 || len(b.Timers) > 0) {
		o.trace = inject(o.ctx)
	}
	return o.trace
}

// committed records the version and status the step committed.
func (o *stepObs) committed(exe *stead.Execution) {
	o.outcome, o.after, o.status = outcomeCommitted, exe.Version, exe.Status
}

// end closes the step span and counts the step.
func (o *stepObs) end(err error) {
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
func (t *Observer) record(definition, outcome string, n int, d float64) {
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
func (t *Observer) attrs(definition, outcome string) *stepSet {
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
func (t *Observer) batch(ctx context.Context, claimStart time.Time, n int, db string) (context.Context, trace.Span) {
	if !t.tracing {
		return ctx, nil
	}
	ctx, span := t.tracer.Start(ctx, "stead.batch", trace.WithTimestamp(claimStart),
		trace.WithAttributes(attrBatchSize.Int(n)))
	t.dbSpan(ctx, "ClaimBatch", "transport_messages", db, n, claimStart, time.Now())
	return ctx, span
}

// dbSpan records a finished database call as a client span.
func (t *Observer) dbSpan(ctx context.Context, op, collection string, system string, n int, start, end time.Time) {
	_, span := t.startDB(ctx, op, collection, system, n, start)
	span.End(trace.WithTimestamp(end))
}

func (t *Observer) startDB(ctx context.Context, op, collection string, system string, n int, start time.Time) (context.Context, trace.Span) {
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

func (t *Observer) call(op, collection string, system string) *callSpan {
	k := callKey{op, collection, system}
	if v, ok := t.calls.Load(k); ok {
		return v.(*callSpan)
	}
	attrs := []attribute.KeyValue{semconv.DBOperationName(op), semconv.DBCollectionName(collection)}
	if system != "" {
		attrs = append(attrs, semconv.DBSystemNameKey.String(system))
	}
	c := &callSpan{name: op + " " + collection,
		opts: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)}}
	v, _ := t.calls.LoadOrStore(k, c)
	return v.(*callSpan)
}

// Call starts the span of a store or transport call; end ends it with the call's error.
func (t *Observer) Call(ctx context.Context, c worker.Call) (context.Context, func(error)) {
	if !t.tracing {
		return ctx, nil
	}
	ctx, span := t.startDB(ctx, c.Op, c.Collection, c.DB, c.N, time.Time{})
	return ctx, func(err error) { endSpan(span, err) }
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

// TimerFired records how late a due timer was published.
func (t *Observer) TimerFired(late time.Duration) {
	if t.metering {
		t.lateness.Record(context.Background(), late.Seconds())
	}
}

// stepObsList is the observations of a batch's messages, aligned with its leases.
type stepObsList []stepObs

// batchObs is the worker.BatchObserver of one batch: its messages' observations and its span
// (nil for a message claimed alone, or untraced). Ended, it is kept for a later batch.
type batchObs struct {
	t    *Observer
	list stepObsList
	span trace.Span
}

func (b *batchObs) Loaded(i int, exe *stead.Execution) { b.list[i].loaded(exe) }

func (b *batchObs) Outcome(i int, o worker.StepOutcome, err error) {
	b.list[i].outcome = string(o)
	if err != nil {
		b.list[i].err = err
	}
}

func (b *batchObs) Stepped(i int, bundle *stead.Bundle) string { return b.list[i].stepped(bundle) }

func (b *batchObs) Committed(i int, exe *stead.Execution) { b.list[i].committed(exe) }

func (b *batchObs) End() {
	b.list.end(b.span)
	b.t.reuse(b)
}

// end counts every step of the batch, links each to the batch's span with its attributes, and
// ends the span. The links are built only when the span records (a sampler may drop the batch).
// The steps' counters are added once per definition and outcome, as every step of a batch has
// the same start and end.
func (s stepObsList) end(batch trace.Span) {
	if len(s) == 0 {
		return
	}
	if s[0].span != nil { // a message claimed alone: its own step span, no batch
		s[0].end(s[0].err)
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
func (t *Observer) reuse(b *batchObs) {
	clear(b.list) // drop the references to the leases and strings of the batch
	b.span = nil
	t.lists.Put(b)
}

// Batch starts the batch span, a root whose links are its messages: each links the trace
// context its event carries (the step that sent it) and holds the step's attributes, and what
// the steps send carries the batch span's context on. It returns ctx with the batch span, to hang
// the batch's store and transport calls from.
//
// A message claimed alone by an unbatched worker (Claim.Alone) gets a step span of its own
// instead, a child of the trace context its event carries (begin), with its calls hanging from
// it.
func (t *Observer) Batch(ctx context.Context, c worker.Claim) (context.Context, worker.BatchObserver) {
	if !t.on() {
		return ctx, unwatched{}
	}
	leases := c.Leases
	if c.Alone && len(leases) == 1 {
		b := t.list(1)
		b.list[0] = t.begin(ctx, &leases[0], c.Start)
		b.list[0].claimed(c.DB)
		return b.list[0].ctx, b
	}
	bctx, span := t.batch(ctx, c.Start, len(leases), c.DB)
	carried := ""
	if span != nil {
		carried = inject(bctx)
	}
	linked := span != nil && span.IsRecording()
	b := t.list(len(leases))
	b.span = span
	for i := range leases {
		b.list[i] = stepObs{t: t, start: c.Start, outcome: outcomeDropped, trace: carried}
		if linked {
			b.list[i].lease = &leases[i]
		}
	}
	return bctx, b
}

// unwatched is the BatchObserver of an Observer given no provider.
type unwatched struct{}

func (unwatched) Loaded(int, *stead.Execution)           {}
func (unwatched) Outcome(int, worker.StepOutcome, error) {}
func (unwatched) Stepped(int, *stead.Bundle) string      { return "" }
func (unwatched) Committed(int, *stead.Execution)        {}
func (unwatched) End()                                   {}

// list returns the observer of a batch of n, reused from an ended batch when one is large enough.
func (t *Observer) list(n int) *batchObs {
	b, _ := t.lists.Get().(*batchObs)
	if b == nil {
		b = &batchObs{t: t}
	}
	if cap(b.list) < n {
		b.list = make(stepObsList, n)
	}
	b.list = b.list[:n]
	return b
}
