package otelstead

// A worker on memstore and memtransport with a counting machine, as package worker's tests have
// it: the telemetry tests run whole workers.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/worker"
)

type counter struct{}

type counterCtx struct {
	N      int `json:"n"`
	Joined int `json:"joined"`
}

func (counter) Step(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	next := exe.Clone()
	b := stead.Bundle{ProcessedEventID: ev.ID}
	var c counterCtx
	if len(next.Context) > 0 {
		if err := json.Unmarshal(next.Context, &c); err != nil {
			return nil, b, err
		}
	}
	switch ev.Kind {
	case chart.KindStart:
		next.Status = stead.StatusRunning
		next.ActivePath = "counting"
		if next.ParentID != "" {
			// A child reports to its parent at once and is done.
			next.Status, next.Outcome = stead.StatusDone, "child"
			b.Emits = append(b.Emits, stead.Emit{Target: next.ParentID, Event: stead.Event{
				ID: "finished:" + next.ID, Kind: chart.KindFinished}})
		}
	case "tick":
		c.N++
	case "fork":
		seq := next.InvokeSeq["counting"]
		if next.InvokeSeq == nil {
			next.InvokeSeq = map[string]int{}
		}
		next.InvokeSeq["counting"] = seq + 1
		for i := range 2 {
			b.Spawns = append(b.Spawns, stead.Spawn{ChildID: fmt.Sprintf("%s:r%d:%d", next.ID, i, seq), RootPath: "counting"})
		}
	case chart.KindFinished:
		c.Joined++
	case "arm":
		b.Timers = append(b.Timers, stead.TimerOp{Action: stead.TimerSchedule, Path: "counting", FireAt: now.Add(time.Hour)})
	case chart.KindTimeout:
		c.N += 100
	case "emit":
		var target string
		if err := json.Unmarshal(ev.Data, &target); err != nil {
			return nil, b, err
		}
		b.Emits = append(b.Emits, stead.Emit{Target: target, Event: stead.Event{ID: "from:" + ev.ID, Kind: "tick"}})
	case "finish":
		next.Status, next.Outcome = stead.StatusDone, "ok"
	case "boom":
		return nil, b, fmt.Errorf("boom")
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, b, err
	}
	next.Context = raw
	next.UpdatedAt = now
	return next, b, nil
}

// clock is a settable test clock: wall time plus an offset the test can jump forward, so that
// hour-long timers fire without sleeping.
type clock struct{ offset atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// harness is a worker on memstore and memtransport with the counter machine.
type harness struct {
	t      *testing.T
	store  *stead.Store
	tr     *transport.Transport
	clock  *clock
	client *worker.Client
	logs   *syncBuffer
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	c := &clock{}
	h := &harness{t: t, clock: c, logs: &syncBuffer{}}
	h.store = memstore.New()
	h.tr = memtransport.New(memtransport.WithClock(c.Now), memtransport.WithPollInterval(20*time.Millisecond))
	t.Cleanup(func() {
		_ = h.tr.Close()
		_ = h.store.Close()
	})
	h.client = &worker.Client{Store: h.store, Transport: h.tr, Clock: c.Now, Stamper: &Observer{}}
	return h
}

// config returns a worker configuration with short intervals for tests.
func (h *harness) config() worker.Config {
	return worker.Config{
		Store: h.store, Transport: h.tr, Machines: worker.Machines{"counter": counter{}},
		Name: "test", Concurrency: 4, BatchSize: 1,
		TimerInterval: 10 * time.Millisecond, RelayInterval: 50 * time.Millisecond,
		IdleWait: 20 * time.Millisecond, RetryDelay: 20 * time.Millisecond,
		Clock:  h.clock.Now,
		Logger: slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// start runs a worker until the test ends (or until the returned stop is called, which waits
// for Run to return).
func (h *harness) start(cfg worker.Config) (stop func()) {
	h.t.Helper()
	w, err := worker.New(cfg)
	if err != nil {
		h.t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					h.t.Errorf("Run: %v", err)
				}
			case <-time.After(10 * time.Second):
				h.t.Errorf("Run did not return within 10s of its context ending")
			}
		})
	}
	h.t.Cleanup(stop)
	return stop
}

func (h *harness) create(ids ...string) {
	h.t.Helper()
	var news []worker.NewExecution
	for _, id := range ids {
		news = append(news, worker.NewExecution{DefinitionID: "counter", ID: id})
	}
	if _, err := h.client.CreateBatch(context.Background(), news); err != nil {
		h.t.Fatalf("CreateBatch: %v", err)
	}
}

func (h *harness) send(id, kind, eventID string) {
	h.t.Helper()
	if _, err := h.client.Send(context.Background(), id, stead.Event{ID: eventID, Kind: kind}); err != nil {
		h.t.Fatalf("Send %s to %s: %v", kind, id, err)
	}
}

func (h *harness) counts(id string) (counterCtx, *stead.Execution) {
	h.t.Helper()
	exe, err := h.store.Load(context.Background(), id)
	if err != nil {
		h.t.Fatalf("Load %s: %v", id, err)
	}
	var c counterCtx
	if len(exe.Context) > 0 {
		if err := json.Unmarshal(exe.Context, &c); err != nil {
			h.t.Fatalf("context of %s: %v", id, err)
		}
	}
	return c, exe
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
