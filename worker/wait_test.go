package worker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/worker"
)

// waitChart finishes on "go" (done), fails on "boom" (its entry action errs, with no retry),
// and counts "tick"s on the way.
const waitChart = `
id: waiter
initial: waiting
states:
  waiting:
    on:
      tick: {actions: [count]}
      go: finished
      boom: breaking
  breaking:
    entry: [explode]
    on: {go: finished}
  finished: {final: success}
retry: {explode: none}
`

func waitMachines(t *testing.T) worker.Machines {
	t.Helper()
	def, err := chart.Parse("waiter.yaml", []byte(waitChart))
	if err != nil {
		t.Fatal(err)
	}
	reg := chart.NewRegistry().
		Action("count", func(c chart.ActionContext) (chart.ActionResult, error) {
			c.SetFloat("ticks", c.Float("ticks")+1)
			return chart.ActionResult{}, nil
		}).
		Action("explode", func(chart.ActionContext) (chart.ActionResult, error) {
			return chart.ActionResult{}, errors.New("the ticket API answered 503")
		})
	eng, err := chart.NewEngine(def, reg)
	if err != nil {
		t.Fatal(err)
	}
	return worker.Machines{"waiter": eng}
}

// lockedBuffer is a log sink the worker's goroutines write to while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// finishes counts OnFinish calls by execution.
type finishes struct {
	mu sync.Mutex
	n  map[string]int
	st map[string]stead.Status
}

func (f *finishes) record(exe *stead.Execution) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n[exe.ID]++
	f.st[exe.ID] = exe.Status
}

func (f *finishes) get(id string) (int, stead.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[id], f.st[id]
}

// TestWait waits for executions on every kind of backend: one that finishes done, one that
// fails, one that is still running when the caller gives up, and one that does not exist. It
// checks the worker's OnFinish calls (once per finished execution, also when one commit applied
// a chain of events that finished it) and its WARN line for the failure.
func TestWait(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		open   func(t *testing.T) *testBackend
		shared bool
		notify bool // the store's backend notifies: Wait must not need its slow poll
	}{
		{name: "memory", open: func(t *testing.T) *testBackend {
			tr := memtransport.New()
			t.Cleanup(func() { tr.Close() })
			return &testBackend{Store: memstore.New(), Transport: tr}
		}},
		{name: "sqlite", open: func(t *testing.T) *testBackend { b, _, _ := openCase(t, backendCases[1]); return b }},
		{name: "postgres", open: func(t *testing.T) *testBackend { b, _, _ := openCase(t, backendCases[3]); return b }, notify: true},
		{name: "postgres shared-tx", open: func(t *testing.T) *testBackend { b, _, _ := openCase(t, backendCases[5]); return b },
			shared: true, notify: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := c.open(t)
			if _, ok := b.Store.Backend().(worker.FinishWatcher); ok != c.notify {
				t.Fatalf("backend %T: FinishWatcher %v, want %v", b.Store.Backend(), ok, c.notify)
			}
			machines := waitMachines(t)
			ctx := context.Background()
			client := &worker.Client{Store: b.Store, Transport: b.Transport, Known: machines}
			// The chain: created, ticked and finished before any worker runs, so that a batch
			// can apply all of it in one commit.
			if _, err := client.Create(ctx, "waiter", "chain", nil); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if _, err := client.Send(ctx, "chain", stead.Event{ID: fmt.Sprintf("tick-%d", i), Kind: "tick"}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := client.Send(ctx, "chain", stead.Event{ID: "chain-go", Kind: "go"}); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"ok", "broken", "idle"} {
				if _, err := client.Create(ctx, "waiter", id, nil); err != nil {
					t.Fatal(err)
				}
			}

			logs := &lockedBuffer{}
			fin := &finishes{n: map[string]int{}, st: map[string]stead.Status{}}
			wctx, stop := context.WithCancel(ctx)
			var wg sync.WaitGroup
			t.Cleanup(func() { stop(); wg.Wait() })
			w, err := worker.New(worker.Config{Store: b.Store, Transport: b.Transport, Machines: machines,
				Concurrency: 2, BatchSize: 16, SharedTx: b.shared(t, c.shared), Finisher: b.finisher(t, c.shared), IdleWait: 50 * time.Millisecond,
				Logger:   slog.New(slog.NewTextHandler(logs, nil)),
				OnFinish: fin.record})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				if err := w.Run(wctx); err != nil {
					t.Errorf("run: %v", err)
				}
			})

			exe, err := client.Wait(ctx, "chain")
			if err != nil || exe.Status != stead.StatusDone || exe.Outcome != "success" {
				t.Fatalf("Wait(chain) = %+v, %v; want done with outcome success", exe, err)
			}

			// Wait blocks while the execution runs, and returns soon after it finishes.
			type result struct {
				exe *stead.Execution
				err error
				at  time.Time
			}
			waited := make(chan result, 1)
			go func() {
				exe, err := client.Wait(ctx, "ok")
				waited <- result{exe, err, time.Now()}
			}()
			select {
			case r := <-waited:
				t.Fatalf("Wait returned before the execution finished: %+v, %v", r.exe, r.err)
			case <-time.After(300 * time.Millisecond):
			}
			sent := time.Now()
			if _, err := client.Send(ctx, "ok", stead.Event{ID: "ok-go", Kind: "go"}); err != nil {
				t.Fatal(err)
			}
			r := <-waited
			if r.err != nil || r.exe.Status != stead.StatusDone || r.exe.Outcome != "success" {
				t.Fatalf("Wait(ok) = %+v, %v; want done with outcome success", r.exe, r.err)
			}
			// With notifications Wait loads only every 5 s on its own: returning well within
			// that shows the notification woke it.
			if lag := r.at.Sub(sent); c.notify && lag > 2500*time.Millisecond {
				t.Errorf("Wait returned %v after the send: the finish notification did not wake it", lag)
			}

			// A failed execution is returned, failed, with its error.
			if _, err := client.Send(ctx, "broken", stead.Event{ID: "broken-boom", Kind: "boom"}); err != nil {
				t.Fatal(err)
			}
			exe, err = client.Wait(ctx, "broken")
			if err != nil || exe.Status != stead.StatusFailed || !strings.Contains(exe.Error, "503") {
				t.Fatalf("Wait(broken) = %+v, %v; want failed with the action's error", exe, err)
			}

			// A running execution: Wait gives up with ctx.
			short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			if exe, err := client.Wait(short, "idle"); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Wait(idle) = %+v, %v; want context.DeadlineExceeded", exe, err)
			}
			if _, err := client.Wait(ctx, "nobody"); !errors.Is(err, stead.ErrNotFound) {
				t.Errorf("Wait(nobody) = %v; want ErrNotFound", err)
			}
			if _, err := client.Wait(ctx, ""); !errors.Is(err, stead.ErrInvalid) {
				t.Errorf("Wait(\"\") = %v; want ErrInvalid", err)
			}

			// OnFinish: once per finished execution, none for the running one.
			for id, want := range map[string]stead.Status{"chain": stead.StatusDone, "ok": stead.StatusDone, "broken": stead.StatusFailed} {
				waitUntil(t, 10*time.Second, "OnFinish of "+id, func() bool { n, _ := fin.get(id); return n > 0 })
				if n, st := fin.get(id); n != 1 || st != want {
					t.Errorf("OnFinish(%s): %d calls with %s, want 1 with %s", id, n, st, want)
				}
			}
			if n, _ := fin.get("idle"); n != 0 {
				t.Errorf("OnFinish(idle): %d calls for a running execution", n)
			}

			// The failure is one WARN line naming the execution, state, event and error.
			var lines []string
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "execution failed") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 {
				t.Fatalf("%d 'execution failed' lines, want 1:\n%s", len(lines), logs.String())
			}
			for _, want := range []string{"level=WARN", "execution=broken", "definition=waiter", "state=waiting",
				"failed_in=breaking", "event=broken-boom", "kind=boom", "503"} {
				if !strings.Contains(lines[0], want) {
					t.Errorf("failure line lacks %q: %s", want, lines[0])
				}
			}
		})
	}
}

// TestWaitStoreMissing refuses a Client without a store.
func TestWaitStoreMissing(t *testing.T) {
	t.Parallel()
	if _, err := (&worker.Client{}).Wait(context.Background(), "x"); !errors.Is(err, stead.ErrInvalid) {
		t.Errorf("Wait on a Client without Store = %v; want ErrInvalid", err)
	}
}

// TestWorkerLogsToDefault checks that a worker given no logger writes to slog.Default() (it
// used to discard), by replacing the default for the duration of the test; the test does not
// run in parallel for that reason.
func TestWorkerLogsToDefault(t *testing.T) {
	logs := &lockedBuffer{}
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	tr := memtransport.New()
	defer tr.Close()
	store := memstore.New()
	machines := waitMachines(t)
	client := &worker.Client{Store: store, Transport: tr, Known: machines}
	ctx := context.Background()
	if _, err := client.Create(ctx, "waiter", "loud", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Send(ctx, "loud", stead.Event{ID: "loud-boom", Kind: "boom"}); err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(worker.Config{Store: store, Transport: tr, Machines: machines, Concurrency: 1, IdleWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	if exe, err := client.Wait(ctx, "loud"); err != nil || exe.Status != stead.StatusFailed {
		t.Fatalf("Wait = %+v, %v", exe, err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); !strings.Contains(out, "level=WARN msg=\"execution failed\"") || !strings.Contains(out, "execution=loud") {
		t.Errorf("the default logger did not get the failure:\n%s", out)
	}
}

// TestRetryIsLogged checks the worker's INFO line for every retry an action's failure
// schedules, and that an action that succeeds on its third attempt fails nothing.
func TestRetryIsLogged(t *testing.T) {
	t.Parallel()
	def, err := chart.Parse("flaky.yaml", []byte(`
id: flaky
initial: calling
states:
  calling: {select: {action: call, cases: {ok: called}}}
  called: {final: success}
retry: {call: {attempts: 3, backoff: 10ms}}
`))
	if err != nil {
		t.Fatal(err)
	}
	reg := chart.NewRegistry().Selector("call", []string{"ok"}, func(c chart.ActionContext) (chart.ActionResult, error) {
		if c.Attempt < 3 {
			return chart.ActionResult{}, errors.New("503")
		}
		return chart.ActionResult{Label: "ok"}, nil
	})
	eng, err := chart.NewEngine(def, reg)
	if err != nil {
		t.Fatal(err)
	}
	machines := worker.Machines{"flaky": eng}
	store, tr := memstore.New(), memtransport.New()
	defer store.Close()
	defer tr.Close()
	logs := &lockedBuffer{}
	w, err := worker.New(worker.Config{Store: store, Transport: tr, Machines: machines, Concurrency: 1,
		TimerInterval: 10 * time.Millisecond, IdleWait: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	client := &worker.Client{Store: store, Transport: tr, Known: machines}
	if _, err := client.Create(context.Background(), "flaky", "f", nil); err != nil {
		t.Fatal(err)
	}
	exe, err := client.Wait(context.Background(), "f")
	stop()
	if werr := <-done; werr != nil {
		t.Fatal(werr)
	}
	if err != nil || exe.Status != stead.StatusDone {
		t.Fatalf("Wait = %+v, %v", exe, err)
	}
	var lines []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "action failed; retrying") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 || !strings.Contains(lines[0], "failed_attempts=1") || !strings.Contains(lines[1], "failed_attempts=2") ||
		!strings.Contains(lines[0], "execution=f") || !strings.Contains(lines[0], "kind=stead.start") {
		t.Errorf("retry lines:\n%s", strings.Join(lines, "\n"))
	}
	if strings.Contains(logs.String(), "execution failed") {
		t.Errorf("a retried success was logged as a failure:\n%s", logs.String())
	}
}
