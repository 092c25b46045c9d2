package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/memtransport"
)

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
	client *Client
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
	h.client = &Client{Store: h.store, Transport: h.tr, Clock: c.Now}
	return h
}

// config returns a worker configuration with short intervals for tests.
func (h *harness) config() Config {
	return Config{
		Store: h.store, Transport: h.tr, Machines: Machines{"counter": counter{}},
		Name: "test", Concurrency: 4, BatchSize: 1,
		TimerInterval: 10 * time.Millisecond, RelayInterval: 50 * time.Millisecond,
		IdleWait: 20 * time.Millisecond, RetryDelay: 20 * time.Millisecond,
		Clock:  h.clock.Now,
		Logger: slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// start runs a worker until the test ends (or until the returned stop is called, which waits
// for Run to return).
func (h *harness) start(cfg Config) (stop func()) {
	h.t.Helper()
	w, err := New(cfg)
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
	var news []NewExecution
	for _, id := range ids {
		news = append(news, NewExecution{DefinitionID: "counter", ID: id})
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

// settleGoroutines waits until no more goroutines run than before, and fails with their stacks
// otherwise. Tests that use it do not call t.Parallel, so that the count is theirs alone.
func settleGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("goroutine leak: %d running, %d before\n%s", runtime.NumGoroutine(), before, buf[:n])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
