package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/cli/backend"
	"github.com/steadhq/stead/internal/benchutil"
	"github.com/steadhq/stead/otelstead"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/worker"
)

// Config is one run of the scenario.
type Config struct {
	// Store is a SQLite file path or a PostgreSQL URL. The run starts from an empty store: give a
	// fresh file, or a Schema that does not exist yet (it is created, and dropped by Cleanup).
	Store  string
	Schema string
	// Executions and EventsPer size the backlog: each execution gets a start event and
	// EventsPer-1 ticks, all published before the worker starts.
	Executions int
	EventsPer  int
	// Concurrency is the worker's number of claim loops; BatchSize 1 is unbatched.
	Concurrency int
	BatchSize   int
	SharedTx    bool
	// Notify keeps the PostgreSQL transport's NOTIFY on publish, ack and nack (off by default
	// here: a worker draining a backlog never waits, and PostgreSQL serialises notifying commits).
	Notify bool
	// Trickle, after the drain, sends that many events one at a time to the now idle worker,
	// each after the previous one committed, and reports their publish→commit latency as
	// IdleP50/IdleP99. On PostgreSQL it needs Notify, or the idle worker wakes only by polling.
	Trickle int
	// Timeout bounds the drain (default 10 min). A drain cut by it is reported as Partial, with
	// the rate of the events it did process.
	Timeout time.Duration
	// Telemetry runs the worker with the OpenTelemetry SDK: every span sampled and batched to an
	// exporter that drops them, every instrument aggregated (see sdk).
	Telemetry bool
	// Trace makes every step record a trace step (the event history an execution keeps up to the
	// store's cap), as a definition with `trace: true` does.
	Trace  bool
	Logger *slog.Logger
}

// Result is what one run measured.
type Result struct {
	Backend     string
	Mode        string // "separate", "shared-tx" (PostgreSQL) or "one-tx" (SQLite's finisher)
	Concurrency int
	BatchSize   int
	Events      int
	Elapsed     time.Duration
	// PerSecond is Events / Elapsed: from the worker's start to the last commit.
	PerSecond float64
	// P50 and P99 are publish→commit latencies. With the whole backlog published up front they
	// are dominated by queueing: they say how long the last events waited.
	P50, P99 time.Duration
	// IdleP50 and IdleP99 are the publish→commit latencies of single events sent to an idle
	// worker (Config.Trickle).
	IdleP50, IdleP99 time.Duration
	// PeakHeap is the largest heap in use (bytes) sampled while the worker drained the backlog;
	// BaseHeap is the heap in use before the worker started (the backlog is in the database).
	PeakHeap, BaseHeap uint64
	// CPU is the user+system CPU time this process (worker and client) used during the drain;
	// on a machine shared with other work, Events/CPU says what the worker costs better than
	// the wall-clock rate does. The database server's CPU is not in it.
	CPU time.Duration
	// Partial is set when Timeout cut the drain: Events is then what was processed in Elapsed.
	Partial bool
	// Telemetry is Config.Telemetry; Spans is how many spans the run's SDK exported.
	Telemetry bool
	Spans     int64
}

// Mode names the transaction mode of a result.
func (r Result) ModeName() string {
	b := "unbatched"
	if r.BatchSize > 1 {
		b = fmt.Sprintf("batched(%d)", r.BatchSize)
	}
	if r.Telemetry {
		b += ", telemetry on"
	}
	return r.Mode + ", " + b
}

// Definition is the benchmark's statechart: it counts ticks and finishes after the last one.
const definitionID = "bench-counter"

// counter is the benchmark's machine. It is a hand-written Machine rather than a chart so that
// the figures measure the worker, the store and the transport: the chart engine has its own
// benchmarks.
type counter struct {
	last  int
	trace bool // every step records a trace step
}

func (c counter) Step(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	next := exe.Clone()
	b := stead.Bundle{ProcessedEventID: ev.ID}
	var n struct {
		N int `json:"n"`
	}
	if len(next.Context) > 0 {
		if err := json.Unmarshal(next.Context, &n); err != nil {
			return nil, b, err
		}
	}
	switch ev.Kind {
	case chart.KindStart:
		next.Status, next.ActivePath = stead.StatusRunning, "counting"
	case "tick":
		n.N++
		if n.N >= c.last {
			next.Status, next.Outcome, next.ActivePath, next.FinishedAt = stead.StatusDone, "success", "done", now
		}
	}
	raw, err := json.Marshal(n)
	if err != nil {
		return nil, b, err
	}
	next.Context, next.UpdatedAt = raw, now
	if c.trace {
		b.Trace = &stead.TraceStep{EventID: ev.ID, EventKind: ev.Kind, From: exe.ActivePath,
			To: next.ActivePath, Context: next.Context, At: now}
	}
	return next, b, nil
}

// Run seeds the backlog, drains it with one worker and reports what it measured.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Executions <= 0 || cfg.EventsPer < 1 || cfg.Concurrency <= 0 || cfg.BatchSize <= 0 {
		return Result{}, fmt.Errorf("bench: executions, events per execution, concurrency and batch size must be positive")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// The store and the transport share the pool: room for each claim loop's connection on both
	// sides, as when each had a pool of its own.
	b, err := backend.Open(ctx, cfg.Store, backend.Options{Schema: cfg.Schema,
		MaxConns: int32(2 * max(4, cfg.Concurrency+2)), NoNotify: !cfg.Notify})
	if err != nil {
		return Result{}, err
	}
	defer b.Close()
	// The one-transaction mode: PostgreSQL's shared transaction, SQLite's finisher.
	shared, err := b.SharedTx(cfg.SharedTx && b.Kind == "postgres")
	if err != nil {
		return Result{}, err
	}
	fin, err := b.Finisher(cfg.SharedTx)
	if err != nil {
		return Result{}, err
	}
	total := cfg.Executions * cfg.EventsPer
	if err := seed(ctx, b.Store, b.Transport, cfg); err != nil {
		return Result{}, fmt.Errorf("bench: seed: %w", err)
	}

	var tel *sdk
	if cfg.Telemetry {
		tel = newSDK()
		defer func() { _ = tel.shutdown(context.WithoutCancel(ctx)) }() // on every early return; a second shutdown does nothing
	}
	var done atomic.Int64
	lat := newLatencies(total)
	finished := make(chan struct{})
	trickled := make(chan time.Time, 1)
	var once sync.Once
	wcfg := worker.Config{
		Store: b.Store, Transport: b.Transport,
		Machines:    worker.Machines{definitionID: counter{last: cfg.EventsPer - 1, trace: cfg.Trace}},
		Name:        "bench",
		Concurrency: cfg.Concurrency, BatchSize: cfg.BatchSize, SharedTx: shared, Finisher: fin,
		IdleWait: 50 * time.Millisecond, TimerInterval: -1, RelayInterval: -1,
		Logger: cfg.Logger,
		OnCommit: func(_ *stead.Execution, ev stead.Event, at time.Time) {
			if strings.HasPrefix(ev.ID, tricklePrefix) {
				select {
				case trickled <- at:
				default:
				}
				return
			}
			lat.add(at.Sub(ev.CreatedAt))
			if done.Add(1) == int64(total) {
				once.Do(func() { close(finished) })
			}
		},
	}
	if tel != nil {
		obs, err := otelstead.New(otelstead.Config{TracerProvider: tel.tp, MeterProvider: tel.mp})
		if err != nil {
			return Result{}, err
		}
		wcfg.Observer = obs
	}
	w, err := worker.New(wcfg)
	if err != nil {
		return Result{}, err
	}
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	res := Result{Backend: b.Kind, Mode: "separate", Concurrency: cfg.Concurrency, BatchSize: cfg.BatchSize,
		Events: total, BaseHeap: ms.HeapInuse, Telemetry: cfg.Telemetry}
	if cfg.SharedTx {
		res.Mode = "shared-tx"
		if b.Kind == "sqlite" {
			res.Mode = "one-tx" // the finisher's: the claim and the load apart
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var peak atomic.Uint64
	sampler := make(chan struct{})
	go func() {
		defer close(sampler)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
				var m goruntime.MemStats
				goruntime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
			}
		}
	}()
	cpu0 := benchutil.CPUTime()
	start := time.Now()
	werr := make(chan error, 1)
	go func() { werr <- w.Run(runCtx) }()
	timeout := time.NewTimer(cfg.Timeout)
	defer timeout.Stop()
	select {
	case <-finished:
	case <-timeout.C:
		res.Partial = true
	case <-ctx.Done():
	}
	res.Elapsed = time.Since(start)
	res.CPU = benchutil.CPUTime() - cpu0
	if res.Partial {
		res.Events = int(done.Load())
	}
	if cfg.Trickle > 0 && !res.Partial && ctx.Err() == nil {
		idle, err := trickle(ctx, b.Transport, cfg, trickled)
		if err != nil {
			stop()
			<-werr
			<-sampler
			return res, err
		}
		res.IdleP50, res.IdleP99 = idle.quantile(0.50), idle.quantile(0.99)
	}
	stop()
	if err := <-werr; err != nil {
		return res, err
	}
	<-sampler
	if tel != nil {
		if err := tel.shutdown(context.WithoutCancel(ctx)); err != nil {
			return res, fmt.Errorf("bench: telemetry: %w", err)
		}
		res.Spans = tel.spans.Load()
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	res.PerSecond = float64(res.Events) / res.Elapsed.Seconds()
	res.P50, res.P99 = lat.quantile(0.50), lat.quantile(0.99)
	res.PeakHeap = peak.Load()
	return res, nil
}

// seed creates the executions and publishes their whole backlog: the starts through the Client
// (with the records), then the ticks, stamped with their publish time.
func seed(ctx context.Context, s *stead.Store, tr *transport.Transport, cfg Config) error {
	const chunk = 500
	c := &worker.Client{Store: s, Transport: tr}
	for i := 0; i < cfg.Executions; i += chunk {
		var news []worker.NewExecution
		for j := i; j < min(i+chunk, cfg.Executions); j++ {
			news = append(news, worker.NewExecution{DefinitionID: definitionID, ID: fmt.Sprintf("bench-%06d", j)})
		}
		if _, err := c.CreateBatch(ctx, news); err != nil {
			return err
		}
	}
	var out []transport.Outgoing
	flush := func() error {
		if len(out) == 0 {
			return nil
		}
		err := tr.PublishBatch(ctx, out)
		out = out[:0]
		return err
	}
	for k := 1; k < cfg.EventsPer; k++ {
		for j := 0; j < cfg.Executions; j++ {
			id := fmt.Sprintf("bench-%06d", j)
			out = append(out, transport.Outgoing{Group: id, Event: stead.Event{
				ID: fmt.Sprintf("tick-%d", k), Kind: "tick", CreatedAt: time.Now()}})
			if len(out) == chunk {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// latencies collects durations from many goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func newLatencies(n int) *latencies { return &latencies{d: make([]time.Duration, 0, n)} }

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) quantile(q float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	slices.Sort(l.d)
	return l.d[min(len(l.d)-1, int(q*float64(len(l.d))))]
}

// tricklePrefix marks the events of the trickle phase.
const tricklePrefix = "trickle-"

// trickle publishes cfg.Trickle events one at a time and measures each one's publish→commit
// latency; committed receives the commit time of each.
func trickle(ctx context.Context, tr *transport.Transport, cfg Config, committed <-chan time.Time) (*latencies, error) {
	l := newLatencies(cfg.Trickle)
	for i := range cfg.Trickle {
		// A short pause lets the worker go idle again: this measures wake-up, not a hot loop.
		time.Sleep(2 * time.Millisecond)
		at := time.Now()
		ev := stead.Event{ID: fmt.Sprintf("%s%d", tricklePrefix, i), Kind: "tick", CreatedAt: at}
		if err := tr.Publish(ctx, fmt.Sprintf("bench-%06d", i%cfg.Executions), ev, 0); err != nil {
			return nil, fmt.Errorf("bench: trickle publish: %w", err)
		}
		select {
		case c := <-committed:
			l.add(c.Sub(at))
		case <-time.After(30 * time.Second):
			return nil, fmt.Errorf("bench: trickle event %d not committed within 30s", i)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return l, nil
}
