package worker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/worker"
)

// span is one run of a slow action: which execution and event, and when it started and ended.
type span struct {
	exe, event string
	start, end time.Time
}

// spans records the runs of the slow action, safe for concurrent use.
type spans struct {
	mu  sync.Mutex
	all []span
}

func (s *spans) add(sp span) {
	s.mu.Lock()
	s.all = append(s.all, sp)
	s.mu.Unlock()
}

func (s *spans) snapshot() []span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.all)
}

// maxOverlap is the most spans running at one instant.
func maxOverlap(all []span) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, s := range all {
		edges = append(edges, edge{s.start, 1}, edge{s.end, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // an end before a start at the same instant
	})
	best, n := 0, 0
	for _, e := range edges {
		n += e.delta
		best = max(best, n)
	}
	return best
}

// slowEngine is a definition whose every "work" event runs an action that takes d (through its
// ActionContext.Context) and counts the events applied, recording each run in rec.
func slowEngine(t *testing.T, d time.Duration, rec *spans) *chart.Engine {
	t.Helper()
	b := chart.New("slow")
	b.Initial("idle")
	b.State("idle").On("work", "").Do("call") // no target: only its action runs
	def, err := b.Definition()
	if err != nil {
		t.Fatal(err)
	}
	reg := chart.NewRegistry().Action("call", func(c chart.ActionContext) (chart.ActionResult, error) {
		start := time.Now()
		select {
		case <-time.After(d):
		case <-c.Context().Done():
			return chart.ActionResult{}, c.Context().Err()
		}
		rec.add(span{exe: c.ExecutionID, event: c.Event.ID, start: start, end: time.Now()})
		c.SetFloat("n", c.Float("n")+1)
		return chart.ActionResult{}, nil
	})
	eng, err := chart.NewEngine(def, reg)
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// TestSlowActionsRunSideBySide: actions of different executions overlap, on every backend and
// mode (beyond the number of claim loops when batched: a batch's steps run side by side), while
// the steps of one execution run one at a time and in the order their events were sent; and
// MaxWorkers bounds how many run at once.
func TestSlowActionsRunSideBySide(t *testing.T) {
	type tc struct {
		backendCase
		maxWorkers int
	}
	var cases []tc
	for _, c := range admissionCases() {
		if c.batch == 0 {
			c.batch = 32
		}
		cases = append(cases, tc{backendCase: c})
	}
	cases = append(cases, tc{backendCase: backendCase{name: "memory bounded by MaxWorkers", batch: 32}, maxWorkers: 3})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := openAdmissionCase(t, c.backendCase)
			rec := &spans{}
			eng := slowEngine(t, 30*time.Millisecond, rec)
			machines := worker.Machines{"slow": eng}
			const loops, executions, events = 2, 12, 3
			w, err := worker.New(worker.Config{
				Store: b.Store, Transport: b.Transport, Machines: machines, Name: "w",
				Concurrency: loops, BatchSize: c.batch, SharedTx: b.shared(t, c.shared), Finisher: b.finisher(t, c.shared),
				MaxWorkers: c.maxWorkers, TimerInterval: -1, RelayInterval: 200 * time.Millisecond,
				IdleWait: 20 * time.Millisecond, RetryDelay: 20 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			client := &worker.Client{Store: b.Store, Transport: b.Transport, Known: machines}
			var news []worker.NewExecution
			for i := range executions {
				news = append(news, worker.NewExecution{DefinitionID: "slow", ID: fmt.Sprintf("x%02d", i)})
			}
			if _, err := client.CreateBatch(ctx, news); err != nil {
				t.Fatal(err)
			}
			for k := range events {
				for _, n := range news {
					if _, err := client.Send(ctx, n.ID, stead.Event{ID: fmt.Sprintf("%s-e%d", n.ID, k), Kind: "work"}); err != nil {
						t.Fatal(err)
					}
				}
			}
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- w.Run(runCtx) }()
			defer func() { stop(); <-done }()
			waitUntil(t, 60*time.Second, "every event applied", func() bool {
				for _, n := range news {
					if count, _ := tallyOf(t, b.Store, n.ID); count != events {
						return false
					}
				}
				return true
			})

			all := rec.snapshot()
			by := map[string][]span{}
			for _, s := range all {
				by[s.exe] = append(by[s.exe], s)
			}
			for id, ss := range by {
				slices.SortFunc(ss, func(a, b span) int { return a.start.Compare(b.start) })
				var got []string
				for i, s := range ss {
					got = append(got, s.event)
					if i > 0 && s.start.Before(ss[i-1].end) {
						t.Errorf("%s: %s started before %s ended", id, s.event, ss[i-1].event)
					}
				}
				want := []string{id + "-e0", id + "-e1", id + "-e2"}
				if !slices.Equal(got, want) {
					t.Errorf("%s ran %v, want %v in that order, once each", id, got, want)
				}
			}
			overlap := maxOverlap(all)
			switch {
			case c.maxWorkers > 0 && overlap > c.maxWorkers:
				t.Errorf("%d actions ran at once, MaxWorkers is %d", overlap, c.maxWorkers)
			case c.maxWorkers > 0 && overlap < 2:
				t.Errorf("at most %d action ran at once under MaxWorkers %d", overlap, c.maxWorkers)
			case c.maxWorkers == 0 && c.batch > 1 && overlap <= loops:
				t.Errorf("at most %d actions ran at once with %d batched loops: a batch ran its steps one after another", overlap, loops)
			case c.maxWorkers == 0 && overlap < 2:
				t.Errorf("at most %d action ran at once with %d loops", overlap, loops)
			}
			t.Logf("%d actions, at most %d at once", len(all), overlap)
		})
	}
}

// gatedEngine is a definition whose "work" event runs an action that, for the execution gated,
// waits until release is closed (or its context ends, whose error it returns), and for every
// other execution returns at once; each run counts into the context's "n".
func gatedEngine(t *testing.T, gated string, release <-chan struct{}, seen chan<- error) *chart.Engine {
	t.Helper()
	b := chart.New("slow").DefaultRetry(*chart.NoRetry()) // a cut action fails at once
	b.Initial("idle")
	b.State("idle").On("work", "").Do("call")
	def, err := b.Definition()
	if err != nil {
		t.Fatal(err)
	}
	reg := chart.NewRegistry().Action("call", func(c chart.ActionContext) (chart.ActionResult, error) {
		if c.ExecutionID == gated {
			select {
			case <-release:
			case <-c.Context().Done():
				seen <- c.Context().Err()
				return chart.ActionResult{}, c.Context().Err()
			}
		}
		c.SetFloat("n", c.Float("n")+1)
		return chart.ActionResult{}, nil
	})
	eng, err := chart.NewEngine(def, reg)
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// seedSlow creates n executions of the "slow" definition, the gated one first, and sends each
// one "work" event.
func seedSlow(t *testing.T, b *testBackend, machines worker.Machines, gated string, n int) []string {
	t.Helper()
	ctx := context.Background()
	client := &worker.Client{Store: b.Store, Transport: b.Transport, Known: machines}
	news := []worker.NewExecution{{DefinitionID: "slow", ID: gated}}
	for i := range n - 1 {
		news = append(news, worker.NewExecution{DefinitionID: "slow", ID: fmt.Sprintf("q%02d", i)})
	}
	if _, err := client.CreateBatch(ctx, news); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, x := range news {
		if _, err := client.Send(ctx, x.ID, stead.Event{ID: x.ID + "-work", Kind: "work"}); err != nil {
			t.Fatal(err)
		}
		out = append(out, x.ID)
	}
	return out
}

// TestStragglerDoesNotHoldItsBatch: with one claim loop, an action that never ends by itself does
// not keep the other steps of its batch, nor the loop's next batches, from committing: they all
// commit while it still runs (by order: the test releases it only after seeing them committed).
// A shared transaction, which cannot commit part of a batch, is left out: there the slowest step
// bounds its batch.
func TestStragglerDoesNotHoldItsBatch(t *testing.T) {
	for _, c := range admissionCases() {
		if c.sharedTx() || c.batch == 1 {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := openAdmissionCase(t, c)
			release := make(chan struct{})
			seen := make(chan error, 1)
			machines := worker.Machines{"slow": gatedEngine(t, "straggler", release, seen)}
			exes := seedSlow(t, b, machines, "straggler", 16)
			w, err := worker.New(worker.Config{
				Store: b.Store, Transport: b.Transport, Machines: machines, Name: "w",
				Concurrency: 1, BatchSize: 32, TimerInterval: -1, RelayInterval: 200 * time.Millisecond,
				IdleWait: 20 * time.Millisecond, RetryDelay: 20 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- w.Run(ctx) }()
			defer func() { stop(); <-done }()
			applied := func(ids []string) bool {
				for _, id := range ids {
					if n, _ := tallyOf(t, b.Store, id); n != 1 {
						return false
					}
				}
				return true
			}
			waitUntil(t, 60*time.Second, "the other executions applied their work", func() bool { return applied(exes[1:]) })
			if applied(exes[:1]) {
				t.Fatal("the straggler committed before it was released")
			}
			close(release)
			waitUntil(t, 60*time.Second, "the straggler applied its work", func() bool { return applied(exes[:1]) })
		})
	}
}

// TestActionContextEnds: an action's context ends at ActionTimeout, and when the worker stops
// and ShutdownTimeout has passed.
func TestActionContextEnds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      worker.Config
		stop     bool
		want     error
		wantFail bool
	}{
		{name: "action timeout", cfg: worker.Config{ActionTimeout: 50 * time.Millisecond}, want: context.DeadlineExceeded, wantFail: true},
		{name: "shutdown", cfg: worker.Config{ShutdownTimeout: 50 * time.Millisecond}, stop: true, want: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := openAdmissionCase(t, backendCase{name: "memory"})
			seen := make(chan error, 1)
			machines := worker.Machines{"slow": gatedEngine(t, "gated", nil, seen)}
			seedSlow(t, b, machines, "gated", 1)
			cfg := tc.cfg
			cfg.Store, cfg.Transport, cfg.Machines, cfg.Name = b.Store, b.Transport, machines, "w"
			cfg.TimerInterval, cfg.IdleWait, cfg.RetryDelay = -1, 20*time.Millisecond, time.Hour
			w, err := worker.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- w.Run(ctx) }()
			defer func() { stop(); <-done }()
			if tc.stop {
				waitUntil(t, 60*time.Second, "the action running", func() bool {
					exe, err := b.Store.Load(context.Background(), "gated")
					return err == nil && exe.Status == stead.StatusRunning
				})
				time.Sleep(20 * time.Millisecond) // the work event's step is under way
				stop()
			}
			select {
			case err := <-seen:
				if !errors.Is(err, tc.want) {
					t.Fatalf("the action's context ended with %v, want %v", err, tc.want)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the action's context never ended")
			}
			if tc.wantFail {
				waitUntil(t, 60*time.Second, "the execution failed by its action", func() bool {
					exe, err := b.Store.Load(context.Background(), "gated")
					return err == nil && exe.Status == stead.StatusFailed
				})
			}
		})
	}
}
