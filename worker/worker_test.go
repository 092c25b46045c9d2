package worker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/transport"
)

// TestWorkerRunsExecutions drives executions through every relayed side effect — ticks, a fork
// whose two children report back, an hour-long timer fired by jumping the clock, an emit to
// another execution — in each worker mode, and checks each event was applied exactly once.
func TestWorkerRunsExecutions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		concurrency int
		batch       int
		wait        time.Duration
	}{
		{"unbatched one loop", 1, 1, 0},
		{"unbatched four loops", 4, 1, 0},
		{"batched", 2, 16, -1},
		{"batched with latency bound", 2, 16, 5 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			cfg := h.config()
			cfg.Concurrency, cfg.BatchSize, cfg.BatchWait = tc.concurrency, tc.batch, tc.wait
			const n, ticks = 20, 10
			exes := ids("exe", n)
			h.create(exes...)
			for _, id := range exes {
				for k := range ticks {
					h.send(id, "tick", fmt.Sprintf("tick-%d", k))
				}
				h.send(id, "fork", "fork")
				h.send(id, "arm", "arm")
			}
			// exe-000 asks the worker to tick exe-001 through its outbox.
			if _, err := h.client.Send(context.Background(), exes[0], stead.Event{ID: "emit-1b", Kind: "emit", Data: []byte(`"` + exes[1] + `"`)}); err != nil {
				t.Fatal(err)
			}
			h.start(cfg)
			eventually(t, 10*time.Second, "ticks, joins and timers armed", func() bool {
				for _, id := range exes {
					c, _ := h.counts(id)
					timers, err := h.store.Timers(context.Background(), id)
					if err != nil || c.Joined != 2 || len(timers) != 1 {
						return false
					}
				}
				return true
			})
			h.clock.Advance(2 * time.Hour)
			eventually(t, 10*time.Second, "timeouts applied", func() bool {
				for _, id := range exes {
					if c, _ := h.counts(id); c.N < 100 {
						return false
					}
				}
				return true
			})
			for _, id := range exes {
				h.send(id, "finish", "finish")
			}
			eventually(t, 10*time.Second, "every execution done", func() bool {
				for _, id := range exes {
					if _, exe := h.counts(id); exe.Status != stead.StatusDone {
						return false
					}
				}
				return true
			})
			for i, id := range exes {
				c, exe := h.counts(id)
				want := ticks + 100 // every tick once, the timeout once
				if i == 1 {
					want++ // the tick exe-000 emitted
				}
				if c.N != want || c.Joined != 2 {
					t.Errorf("%s: n=%d joined=%d, want n=%d joined=2", id, c.N, c.Joined, want)
				}
				if exe.Outcome != "ok" {
					t.Errorf("%s: outcome %q", id, exe.Outcome)
				}
				for r := range 2 {
					child, err := h.store.Load(context.Background(), fmt.Sprintf("%s:r%d:0", id, r))
					if err != nil || child.Status != stead.StatusDone || child.ParentID != id {
						t.Errorf("%s child %d: %+v, %v", id, r, child, err)
					}
				}
			}
			eventually(t, 5*time.Second, "outbox and spawns drained", func() bool {
				o, err1 := h.store.PendingOutbox(context.Background(), "", 10)
				s, err2 := h.store.PendingSpawns(context.Background(), "", 10)
				return err1 == nil && err2 == nil && len(o) == 0 && len(s) == 0
			})
		})
	}
}

// TestDuplicateEventAppliedOnce publishes one event id three times: dedupe applies it once.
func TestDuplicateEventAppliedOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.create("dup")
	for range 3 {
		h.send("dup", "tick", "same-id")
	}
	h.send("dup", "finish", "finish")
	h.start(h.config())
	eventually(t, 5*time.Second, "done", func() bool { _, e := h.counts("dup"); return e.Status == stead.StatusDone })
	if c, _ := h.counts("dup"); c.N != 1 {
		t.Fatalf("n = %d, want 1", c.N)
	}
}

// conflicting is a backend whose first commit of every execution after its start loses its CAS,
// as if another worker had committed first.
type conflicting struct {
	stead.Backend
	seen      map[string]bool
	conflicts atomic.Int64
	mu        chan struct{}
}

func newConflicting(s *stead.Store) *conflicting {
	return &conflicting{Backend: s.Backend(), seen: map[string]bool{}, mu: make(chan struct{}, 1)}
}

func (c *conflicting) lose(w *stead.Write) bool {
	c.mu <- struct{}{}
	defer func() { <-c.mu }()
	if w.Expected == 0 || c.seen[w.Execution.ID] {
		return false
	}
	c.seen[w.Execution.ID] = true
	c.conflicts.Add(1)
	return true
}

func (c *conflicting) Commit(ctx context.Context, w *stead.Write) ([]int64, error) {
	if c.lose(w) {
		return nil, &stead.ConflictError{ID: w.Execution.ID, Expected: w.Expected, Found: w.Expected + 1}
	}
	return c.Backend.Commit(ctx, w)
}

func (c *conflicting) CommitBatch(ctx context.Context, ws []*stead.Write) ([]stead.WriteResult, error) {
	out := make([]stead.WriteResult, len(ws))
	var pass []*stead.Write
	var at []int
	for i, w := range ws {
		if c.lose(w) {
			out[i].Err = &stead.ConflictError{ID: w.Execution.ID, Expected: w.Expected, Found: -1}
			continue
		}
		pass = append(pass, w)
		at = append(at, i)
	}
	if len(pass) > 0 {
		res, err := c.Backend.CommitBatch(ctx, pass)
		if err != nil {
			return nil, err
		}
		for k, i := range at {
			out[i] = res[k]
		}
	}
	return out, nil
}

// TestLostCASRedelivers checks that a step that loses its compare-and-swap is redelivered, and
// in a batch only that step's message is.
func TestLostCASRedelivers(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{1, 8} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			cs := newConflicting(h.store)
			cfg := h.config()
			cfg.Store, cfg.BatchSize = stead.NewStore(cs), batch
			exes := ids("cas", 10)
			h.create(exes...)
			for _, id := range exes {
				for k := range 5 {
					h.send(id, "tick", fmt.Sprint(k))
				}
				h.send(id, "finish", "finish")
			}
			h.start(cfg)
			eventually(t, 10*time.Second, "all done", func() bool {
				for _, id := range exes {
					if _, e := h.counts(id); e.Status != stead.StatusDone {
						return false
					}
				}
				return true
			})
			for _, id := range exes {
				if c, _ := h.counts(id); c.N != 5 {
					t.Errorf("%s: n=%d, want 5", id, c.N)
				}
			}
			if got := cs.conflicts.Load(); got != int64(len(exes)) {
				t.Errorf("%d conflicts injected, want %d", got, len(exes))
			}
		})
	}
}

// failingPublish is a transport backend that refuses publishes while down is set.
type failingPublish struct {
	transport.Backend
	down atomic.Bool
}

func (f *failingPublish) PublishBatch(ctx context.Context, msgs []transport.Outgoing) error {
	if f.down.Load() {
		return fmt.Errorf("%w: transport down", stead.ErrUnavailable)
	}
	return f.Backend.PublishBatch(ctx, msgs)
}

// TestRecoveryDeliversLeftovers leaves what a crash leaves — start events whose publish failed,
// a committed step whose emits and spawns were never relayed — and checks that a worker starting
// up delivers all of it.
func TestRecoveryDeliversLeftovers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	fp := &failingPublish{Backend: h.tr.Backend()}
	failing := transport.New(fp) // h.tr still closes the backend
	h.client.Transport = failing
	fp.down.Store(true)
	// Their starts stay in the outbox, and CreateBatch says so.
	if _, err := h.client.CreateBatch(context.Background(), []NewExecution{
		{DefinitionID: "counter", ID: "left-a"}, {DefinitionID: "counter", ID: "left-b"},
	}); !errors.Is(err, ErrStartDeferred) {
		t.Fatalf("CreateBatch with the transport down: err = %v, want ErrStartDeferred", err)
	}
	fp.down.Store(false)
	if o, _ := h.store.PendingOutbox(context.Background(), "", 10); len(o) != 2 {
		t.Fatalf("pending outbox after failed publish: %d entries, want 2", len(o))
	}
	// A step of left-a that committed (a running state, a tick for left-b, two spawns) but whose
	// worker died before relaying anything.
	exe := &stead.Execution{ID: "left-c", DefinitionID: "counter", Status: stead.StatusRunning, Context: []byte(`{"n":0}`)}
	if _, err := h.store.Commit(context.Background(), exe, stead.Bundle{
		Emits:  []stead.Emit{{Target: "left-b", Event: stead.Event{ID: "orphan-tick", Kind: "tick"}}, {Event: stead.Event{ID: "nowhere", Kind: "tick"}}},
		Spawns: []stead.Spawn{{ChildID: "left-c:r0:0", RootPath: "counting"}, {ChildID: "left-c:r1:0", RootPath: "counting"}},
	}); err != nil {
		t.Fatal(err)
	}
	cfg := h.config()
	cfg.Transport = failing
	cfg.RelayInterval = -1 // only the recovery at start may deliver
	h.start(cfg)
	eventually(t, 5*time.Second, "leftovers delivered", func() bool {
		a, ea := h.store.Load(context.Background(), "left-a")
		b, eb := h.store.Load(context.Background(), "left-b")
		c, _ := h.counts("left-c")
		return ea == nil && eb == nil && a.Status == stead.StatusRunning && b.Status == stead.StatusRunning && c.Joined == 2
	})
	eventually(t, 5*time.Second, "left-b got the orphan tick", func() bool { c, _ := h.counts("left-b"); return c.N == 1 })
	o, _ := h.store.PendingOutbox(context.Background(), "", 10)
	s, _ := h.store.PendingSpawns(context.Background(), "", 10)
	if len(o) != 0 || len(s) != 0 {
		t.Fatalf("after recovery: %d outbox, %d spawns pending", len(o), len(s))
	}
}

// TestAdmit is the table of checks that run before a step.
func TestAdmit(t *testing.T) {
	t.Parallel()
	w := &Worker{}
	exe := func(s stead.Status) *stead.Execution { return &stead.Execution{ID: "x", Status: s} }
	start := stead.Event{ID: "s", Kind: chart.KindStart}
	tick := stead.Event{ID: "t", Kind: "tick"}
	cancel := stead.Event{ID: "c", Kind: chart.KindCancel}
	for _, tc := range []struct {
		name      string
		exe       *stead.Execution
		processed bool
		ev        stead.Event
		want      verdict
	}{
		{"missing execution", nil, false, tick, doAck},
		{"already processed", exe(stead.StatusRunning), true, tick, doAck},
		{"cancelled", exe(stead.StatusCancelled), false, tick, doAck},
		{"cancelled cancel", exe(stead.StatusCancelled), false, cancel, doAck},
		{"suspended", exe(stead.StatusSuspended), false, tick, doPark},
		{"pending start", exe(stead.StatusPending), false, start, doStep},
		{"pending tick", exe(stead.StatusPending), false, tick, doStep}, // step starts it first
		{"pending cancel", exe(stead.StatusPending), false, cancel, doStep},
		{"cancelling tick", exe(stead.StatusCancelling), false, tick, doAck},
		{"cancelling cancel", exe(stead.StatusCancelling), false, cancel, doStep},
		{"running", exe(stead.StatusRunning), false, tick, doStep},
		{"done is routed", exe(stead.StatusDone), false, tick, doStep},
	} {
		if got, why := w.admit(tc.exe, tc.processed, tc.ev); got != tc.want {
			t.Errorf("%s: verdict %d (%s), want %d", tc.name, got, why, tc.want)
		}
	}
}

// TestStartsFirst is the table of events that make step apply a pending execution's start first.
func TestStartsFirst(t *testing.T) {
	t.Parallel()
	retrying := &stead.Execution{ID: "x", Status: stead.StatusPending,
		Timers: map[string]time.Time{chart.RetryTimerPath: time.Now()}}
	for _, tc := range []struct {
		name string
		exe  *stead.Execution
		kind string
		want bool
	}{
		{"pending tick", &stead.Execution{Status: stead.StatusPending}, "tick", true},
		{"pending timeout", &stead.Execution{Status: stead.StatusPending}, chart.KindTimeout, true},
		{"pending start", &stead.Execution{Status: stead.StatusPending}, chart.KindStart, false},
		{"pending cancel", &stead.Execution{Status: stead.StatusPending}, chart.KindCancel, false},
		{"pending with a start being retried", retrying, "tick", false},
		{"running tick", &stead.Execution{Status: stead.StatusRunning}, "tick", false},
	} {
		if got := startsFirst(tc.exe, stead.Event{ID: "e", Kind: tc.kind}); got != tc.want {
			t.Errorf("%s: startsFirst = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestStartFirstKeepsKeysAndVersions: an event that overtook the start is applied after it in
// one bundle — the start processed first, the event after it — and each step runs at the version
// it would have had alone, so the execution's version counts both.
func TestStartFirstKeepsKeysAndVersions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	w, err := New(h.config())
	if err != nil {
		t.Fatal(err)
	}
	exe := &stead.Execution{ID: "x", DefinitionID: "counter", Status: stead.StatusPending, Version: 1}
	next, b, err := w.step(context.Background(), exe, stead.Event{ID: "t1", Kind: "tick"})
	if err != nil {
		t.Fatal(err)
	}
	if b.ProcessedEventID != StartEventID("x") || len(b.AlsoProcessed) != 1 || b.AlsoProcessed[0] != "t1" {
		t.Fatalf("processed %q then %v, want the start then t1", b.ProcessedEventID, b.AlsoProcessed)
	}
	if next.Status != stead.StatusRunning || next.Version != 1 || string(next.Context) != `{"n":1,"joined":0}` {
		t.Fatalf("after start and tick: %s v%d %s", next.Status, next.Version, next.Context)
	}
	if exe.Status != stead.StatusPending || exe.Version != 1 {
		t.Fatalf("step changed its argument: %s v%d", exe.Status, exe.Version)
	}
	if _, err := h.store.Commit(context.Background(), &stead.Execution{ID: "x", DefinitionID: "counter",
		Status: stead.StatusPending}, stead.Bundle{}); err != nil {
		t.Fatal(err)
	}
	loaded, err := h.store.Load(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	next, b, err = w.step(context.Background(), loaded, stead.Event{ID: "t1", Kind: "tick"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.store.Commit(context.Background(), next, b)
	if err != nil {
		t.Fatalf("commit of the start and the tick: %v", err)
	}
	if res.Version != loaded.Version+2 {
		t.Fatalf("version after the start and the tick: %d, want %d", res.Version, loaded.Version+2)
	}
	for _, id := range []string{StartEventID("x"), "t1"} {
		if _, processed, err := h.store.LoadForEvent(context.Background(), "x", id); err != nil || !processed {
			t.Fatalf("%s processed = %v (%v), want true", id, processed, err)
		}
	}
}

// TestStepErrorDoesNotStopOthers: a poisoned execution is retried with a delay and logged,
// while the others go on.
func TestStepErrorDoesNotStopOthers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.create("poison", "healthy")
	h.send("poison", "boom", "boom")
	h.send("healthy", "finish", "finish")
	h.start(h.config())
	eventually(t, 5*time.Second, "healthy done", func() bool { _, e := h.counts("healthy"); return e.Status == stead.StatusDone })
	eventually(t, 5*time.Second, "step failure logged", func() bool { return contains(h.logs.String(), "step failed") })
	if _, e := h.counts("poison"); e.Status != stead.StatusRunning {
		t.Fatalf("poison: status %s, want running (the failing event is retried, not applied)", e.Status)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	good := h.config()
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"no store", func(c *Config) { c.Store = nil }},
		{"no transport", func(c *Config) { c.Transport = nil }},
		{"no machines", func(c *Config) { c.Machines = nil }},
		{"nil machine", func(c *Config) { c.Machines = Machines{"x": nil} }},
		{"negative concurrency", func(c *Config) { c.Concurrency = -1 }},
		{"huge batch", func(c *Config) { c.BatchSize = stead.MaxBatch + 1 }},
		{"negative group depth", func(c *Config) { c.GroupDepth = -1 }},
		{"huge group depth", func(c *Config) { c.GroupDepth = stead.MaxBatch + 1 }},
		{"negative priority share", func(c *Config) { c.PriorityShare = -0.1 }},
		{"priority share over 1", func(c *Config) { c.PriorityShare = 1.5 }},
		{"NaN priority share", func(c *Config) { c.PriorityShare = math.NaN() }},
		{"priority threshold too high", func(c *Config) { c.PriorityThreshold = stead.MaxPriority + 1 }},
		{"negative priority threshold", func(c *Config) { c.PriorityThreshold = -1 }},
	} {
		cfg := good
		tc.mod(&cfg)
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted it", tc.name)
		}
	}
	if _, err := New(good); err != nil {
		t.Fatalf("good config: %v", err)
	}
}

func TestClient(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	h.client.Known = Machines{"counter": counter{}}
	if _, err := h.client.Create(ctx, "counter", "c1", []byte(`{"n":5}`)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		do   func() error
		want error
	}{
		{"duplicate id", func() error { _, err := h.client.Create(ctx, "counter", "c1", nil); return err }, stead.ErrAlreadyExists},
		{"unknown definition", func() error { _, err := h.client.Create(ctx, "nope", "c2", nil); return err }, stead.ErrInvalid},
		{"empty id", func() error { _, err := h.client.Create(ctx, "counter", "", nil); return err }, stead.ErrInvalid},
		{"context not an object", func() error { _, err := h.client.Create(ctx, "counter", "c3", []byte(`[1]`)); return err }, stead.ErrInvalid},
		{"NUL in id", func() error { _, err := h.client.Create(ctx, "counter", "c\x00", nil); return err }, stead.ErrInvalid},
		{"empty batch", func() error { _, err := h.client.CreateBatch(ctx, nil); return err }, stead.ErrInvalid},
		{"send start", func() error { _, err := h.client.Send(ctx, "c1", stead.Event{Kind: chart.KindStart}); return err }, stead.ErrInvalid},
		{"send without kind", func() error { _, err := h.client.Send(ctx, "c1", stead.Event{}); return err }, stead.ErrInvalid},
		{"send bad data", func() error {
			_, err := h.client.Send(ctx, "c1", stead.Event{Kind: "tick", Data: []byte("{")})
			return err
		}, stead.ErrInvalid},
		{"send to an invalid id", func() error { _, err := h.client.Send(ctx, "gh\x00st", stead.Event{Kind: "tick"}); return err }, stead.ErrInvalid},
		{"send a reserved kind", func() error { _, err := h.client.Send(ctx, "e", stead.Event{Kind: chart.KindFinished}); return err }, stead.ErrInvalid},
		// Without a Sender, Send loads the execution: a missing one is ErrNotFound, nothing published.
		{"send to missing", func() error { _, err := h.client.Send(ctx, "ghost", stead.Event{Kind: "tick"}); return err }, stead.ErrNotFound},
	} {
		if err := tc.do(); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	ev, err := h.client.Send(ctx, "c1", stead.Event{Kind: "tick"})
	if err != nil || ev.ID == "" {
		t.Fatalf("Send: %+v, %v", ev, err)
	}
	if o, _ := h.store.PendingOutbox(ctx, "", 10); len(o) != 0 {
		t.Fatalf("the start stayed in the outbox after a successful publish: %+v", o)
	}
}

// slowCommits is a backend that delays every commit and counts those begun and finished.
type slowCommits struct {
	stead.Backend
	delay         time.Duration
	begun, landed atomic.Int64
}

func (s *slowCommits) Commit(ctx context.Context, w *stead.Write) ([]int64, error) {
	s.begun.Add(1)
	time.Sleep(s.delay)
	seqs, err := s.Backend.Commit(ctx, w)
	if err == nil {
		s.landed.Add(1)
	}
	return seqs, err
}

// TestGracefulShutdown stops a busy worker: Run returns once the steps in flight are done, none
// is cut between its commit and its acknowledgement, and a second worker finishes the rest with
// every event applied exactly once. It also checks that nothing the worker started keeps
// running (no goroutine leak), so it does not run in parallel with other tests.
func TestGracefulShutdown(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Run("run", func(t *testing.T) {
		h := newHarness(t)
		slow := &slowCommits{Backend: h.store.Backend(), delay: 5 * time.Millisecond}
		cfg := h.config()
		cfg.Store = stead.NewStore(slow)
		exes := ids("grace", 8)
		h.create(exes...)
		const ticks = 30
		for _, id := range exes {
			for k := range ticks {
				h.send(id, "tick", fmt.Sprint(k))
			}
		}
		stop := h.start(cfg)
		eventually(t, 5*time.Second, "some progress", func() bool { return slow.landed.Load() > 20 })
		stop()
		if b, l := slow.begun.Load(), slow.landed.Load(); b != l {
			t.Fatalf("%d commits begun but %d landed: shutdown cut steps", b, l)
		}
		if !contains(h.logs.String(), "worker stopped") {
			t.Errorf("no stop logged")
		}
		// Nothing claimed may stay claimed: a second worker must not wait out a lease.
		cfg.Visibility = time.Hour
		h.start(cfg)
		eventually(t, 10*time.Second, "second worker finishes", func() bool {
			for _, id := range exes {
				if c, _ := h.counts(id); c.N != ticks {
					return false
				}
			}
			return true
		})
	})
	settleGoroutines(t, before)
}

// TestPriorityShare checks the claim policy: with PriorityShare 1 an execution at the threshold
// is served before a backlog of ordinary ones that the round-robin would serve first; with 0 its
// priority changes nothing.
func TestPriorityShare(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		share     float64
		batch     int
		wantFirst bool
	}{
		{"always, unbatched", 1, 1, true},
		{"always, batched", 1, 4, true},
		{"never", 0, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			low := ids("a-low", 20)
			h.create(low...)
			// Created last and named to sort last: the round-robin serves it last.
			if _, err := h.client.CreateBatch(context.Background(), []NewExecution{{DefinitionID: "counter", ID: "z-high", Priority: 2}}); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var order []string
			cfg := h.config()
			cfg.Concurrency, cfg.BatchSize, cfg.BatchWait = 1, tc.batch, -1
			cfg.PriorityShare, cfg.PriorityThreshold = tc.share, 2
			cfg.OnCommit = func(exe *stead.Execution, _ stead.Event, _ time.Time) {
				mu.Lock()
				order = append(order, exe.ID)
				mu.Unlock()
			}
			h.start(cfg)
			eventually(t, 10*time.Second, "every start committed", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(order) == len(low)+1
			})
			mu.Lock()
			defer mu.Unlock()
			if first := order[0] == "z-high"; first != tc.wantFirst {
				t.Fatalf("service order %v: high priority first = %v, want %v", order, first, tc.wantFirst)
			}
		})
	}
}

// TestCreateBatchCreatesEveryFreeID creates a batch in which one id is taken: the others are
// created and started (their start events published, not left for the relay), the taken one is
// reported as ErrAlreadyExists, and an invalid item refuses the whole batch before anything is
// written.
func TestCreateBatchCreatesEveryFreeID(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	h.create("taken")
	news := []NewExecution{{DefinitionID: "counter", ID: "a"}, {DefinitionID: "counter", ID: "taken"}, {DefinitionID: "counter", ID: "b"}}
	exes, err := h.client.CreateBatch(ctx, news)
	if !errors.Is(err, stead.ErrAlreadyExists) || !strings.Contains(err.Error(), `"taken"`) {
		t.Fatalf("CreateBatch with a taken id: %v, want ErrAlreadyExists naming it", err)
	}
	if len(exes) != 2 || exes[0].ID != "a" || exes[1].ID != "b" || exes[0].Version != 1 {
		t.Fatalf("CreateBatch created %+v, want a and b at version 1", exes)
	}
	if o, _ := h.store.PendingOutbox(ctx, "", 10); len(o) != 0 {
		t.Fatalf("start events left for the relay: %+v", o)
	}
	h.start(h.config())
	eventually(t, 5*time.Second, "a and b started", func() bool {
		_, a := h.counts("a")
		_, b := h.counts("b")
		return a.Status == stead.StatusRunning && b.Status == stead.StatusRunning
	})

	bad := []NewExecution{{DefinitionID: "counter", ID: "c"}, {DefinitionID: "counter", ID: "d", Context: []byte(`[1]`)}}
	if _, err := h.client.CreateBatch(ctx, bad); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("CreateBatch with an invalid item: %v, want ErrInvalid", err)
	}
	if _, err := h.store.Load(ctx, "c"); !errors.Is(err, stead.ErrNotFound) {
		t.Fatalf("the valid item of a refused batch was written: %v", err)
	}
	dup := []NewExecution{{DefinitionID: "counter", ID: "e"}, {DefinitionID: "counter", ID: "e"}}
	if _, err := h.client.CreateBatch(ctx, dup); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("CreateBatch with a repeated id: %v, want ErrInvalid", err)
	}
}
