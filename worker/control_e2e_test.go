package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/worker"
)

// opsDefinition is the flow the control suite operates: "work" events append their n to the
// context's "seen" in every state that takes them, an hour-long timer leaves "working" for
// "late" (which takes nothing), "fork" enters two regions run as children, and "fail_now" enters
// a state whose entry fails while the test says so (at once: no retry). Every state the suite cancels in has an exit
// action, "release", counted per execution.
const opsDefinition = `
id: ops
initial: working
states:
  working:
    exit: [release]
    timeout: {after: 1h, target: late}
    on:
      work: {actions: [note]}
      fork: split
      fail_now: broken
  broken:
    entry: [flaky]
    on: {work: {actions: [note]}}
  late: {}
  split:
    parallel: true
    regions:
      left:
        initial: l1
        states:
          l1:
            exit: [release]
            on: {work: {actions: [note]}, l_ok: l_done}
          l_done: {final: success}
      right:
        initial: r1
        states:
          r1:
            exit: [release]
            on: {work: {actions: [note]}, r_ok: r_done}
          r_done: {final: success}
    done: [{target: working}]
retry: {flaky: none}
`

// opsWorld is the outside world of the control suite: how often each execution's exit action
// ran, and whether the flaky entry fails.
type opsWorld struct {
	mu       sync.Mutex
	releases map[string]int
	broken   atomic.Bool
}

func (w *opsWorld) released(id string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.releases[id]
}

func opsMachines(t *testing.T, world *opsWorld) worker.Machines {
	t.Helper()
	def, err := chart.Parse("ops.yaml", []byte(opsDefinition))
	if err != nil {
		t.Fatal(err)
	}
	reg := chart.NewRegistry().
		Action("note", func(c chart.ActionContext) (chart.ActionResult, error) {
			var seen []int
			if _, err := c.Lookup("seen", &seen); err != nil {
				return chart.ActionResult{}, err
			}
			var d struct{ N int }
			if err := json.Unmarshal(c.Event.Data, &d); err != nil {
				return chart.ActionResult{}, err
			}
			return chart.ActionResult{Set: map[string]any{"seen": append(seen, d.N)}}, nil
		}).
		Action("release", func(c chart.ActionContext) (chart.ActionResult, error) {
			world.mu.Lock()
			world.releases[c.ExecutionID]++
			world.mu.Unlock()
			return chart.ActionResult{}, nil
		}).
		Action("flaky", func(chart.ActionContext) (chart.ActionResult, error) {
			if world.broken.Load() {
				return chart.ActionResult{}, errors.New("the downstream service is down")
			}
			return chart.ActionResult{}, nil
		})
	eng, err := chart.NewEngine(def, reg, chart.WithTrace())
	if err != nil {
		t.Fatal(err)
	}
	return worker.Machines{"ops": eng}
}

// controlCases are the backends the control suite runs on: memory, and every SQLite and
// PostgreSQL mode of the end-to-end tests.
func controlCases() []backendCase {
	return append([]backendCase{{name: "memory", batch: 1}}, backendCases...)
}

func openControlCase(t *testing.T, c backendCase) *testBackend {
	t.Helper()
	if c.spec == nil {
		s, tr := memstore.New(), memtransport.New()
		t.Cleanup(func() { tr.Close(); s.Close() })
		return &testBackend{Store: s, Transport: tr}
	}
	b, _, _ := openCase(t, c)
	return b
}

// opsRig is one backend with a worker running the ops flow.
type opsRig struct {
	t      *testing.T
	b      *testBackend
	world  *opsWorld
	clock  *testClock
	client *worker.Client
}

func newOpsRig(t *testing.T, c backendCase) *opsRig {
	t.Helper()
	b := openControlCase(t, c)
	world := &opsWorld{releases: map[string]int{}}
	machines := opsMachines(t, world)
	clock := &testClock{base: time.Now()}
	w, err := worker.New(worker.Config{
		Store: b.Store, Transport: b.Transport, Machines: machines, Name: "ops",
		Concurrency: 2, BatchSize: c.batch, SharedTx: b.shared(t, c.shared), Finisher: b.finisher(t, c.shared), Clock: clock.Now,
		TimerInterval: 20 * time.Millisecond, IdleWait: 20 * time.Millisecond, RetryDelay: 20 * time.Millisecond,
		SuspendRecheck: 50 * time.Millisecond,
		// No periodic relay: what a command leaves undelivered must be delivered by the command
		// (or its repeat), which is what the suite checks.
		RelayInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return &opsRig{t: t, b: b, world: world, clock: clock,
		client: &worker.Client{Store: b.Store, Transport: b.Transport, Known: machines, Clock: clock.Now}}
}

func (r *opsRig) load(id string) *stead.Execution {
	r.t.Helper()
	exe, err := r.b.Store.Load(context.Background(), id)
	if err != nil {
		r.t.Fatalf("Load %s: %v", id, err)
	}
	return exe
}

func (r *opsRig) seen(id string) []int {
	r.t.Helper()
	var c struct{ Seen []int }
	if exe := r.load(id); len(exe.Context) > 0 {
		if err := json.Unmarshal(exe.Context, &c); err != nil {
			r.t.Fatal(err)
		}
	}
	return c.Seen
}

func (r *opsRig) create(id string) {
	r.t.Helper()
	if _, err := r.client.Create(context.Background(), "ops", id, nil); err != nil {
		r.t.Fatal(err)
	}
	r.waitFor(id, "started", func(e *stead.Execution) bool { return e.Status == stead.StatusRunning })
}

func (r *opsRig) send(id, kind string, n int) {
	r.t.Helper()
	ev := stead.Event{ID: fmt.Sprintf("%s-%s-%d", id, kind, n), Kind: kind, Data: fmt.Appendf(nil, `{"n":%d}`, n)}
	if _, err := r.client.Send(context.Background(), id, ev); err != nil {
		r.t.Fatal(err)
	}
}

func (r *opsRig) waitFor(id, what string, cond func(*stead.Execution) bool) *stead.Execution {
	r.t.Helper()
	var last *stead.Execution
	waitUntil(r.t, 30*time.Second, id+" "+what, func() bool {
		e, err := r.b.Store.Load(context.Background(), id)
		if err != nil {
			return false
		}
		last = e
		return cond(e)
	}, func() string { return fmt.Sprintf("last seen: %+v", last) })
	return last
}

func (r *opsRig) control(id string, cmd worker.Command) worker.Outcome {
	r.t.Helper()
	out, err := r.client.Control(context.Background(), id, cmd)
	if err != nil {
		r.t.Fatalf("%s %s: %v", cmd.Op, id, err)
	}
	return out
}

// children returns the ids of the execution's region children.
func (r *opsRig) children(id string) []string {
	r.t.Helper()
	var out []string
	for cid := range r.load(id).Children {
		out = append(out, cid)
	}
	slices.Sort(out)
	return out
}

// TestControlEndToEnd runs the control semantics the worker must satisfy through workers on
// every backend. The subtests share one backend and one worker and run in order (the last one
// moves the clock past every hour-long timer).
func TestControlEndToEnd(t *testing.T) {
	t.Parallel()
	for _, c := range controlCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newOpsRig(t, c)
			for _, sub := range []struct {
				name string
				run  func(*opsRig)
			}{
				{"suspend_and_cancel_cascade_to_children", testSuspendCancelCascade},
				{"cancel_drains_the_backlog_then_runs_exits", testCancelDrains},
				{"repeat_after_the_operator_crashed_applies_once", testRepeatAfterCrash},
				{"set_state_reset_and_retry", testSetStateResetRetry},
				{"commands_race_steps_by_cas", testCommandsRaceSteps},
				{"bad_commands_write_nothing", testBadCommandsWriteNothing},
				{"suspend_parks_and_resume_delivers_in_order", testSuspendParksResumeDelivers},
			} {
				if !t.Run(sub.name, func(t *testing.T) { sub.run(&opsRig{t: t, b: r.b, world: r.world, clock: r.clock, client: r.client}) }) {
					return
				}
			}
		})
	}
}

// testSuspendParksResumeDelivers: a suspended execution takes no event and its due timer fires
// into the parked queue; on resume every parked event and the timeout apply, in order.
func testSuspendParksResumeDelivers(r *opsRig) {
	const id = "park"
	r.create(id)
	armed := r.load(id).Timers["working"]
	if out := r.control(id, worker.Command{Op: worker.OpSuspend}); out.Status != stead.StatusSuspended || out.Repeat {
		r.t.Fatalf("suspend: %+v", out)
	}
	for n := 1; n <= 5; n++ {
		r.send(id, "work", n)
	}
	r.clock.offset.Add(int64(2 * time.Hour)) // past the hour-long timer
	waitUntil(r.t, 30*time.Second, "the due timer fired into the parked queue", func() bool {
		ts, err := r.b.Store.Timers(context.Background(), id)
		return err == nil && len(ts) == 0
	})
	time.Sleep(200 * time.Millisecond) // several park periods
	exe := r.load(id)
	if exe.Status != stead.StatusSuspended || len(r.seen(id)) != 0 || exe.ActivePath != "working" || !exe.Timers["working"].Equal(armed) {
		r.t.Fatalf("while suspended: %s at %q, seen %v, timers %v; want suspended at working, nothing seen, the timer still armed",
			exe.Status, exe.ActivePath, r.seen(id), exe.Timers)
	}
	if out := r.control(id, worker.Command{Op: worker.OpResume}); out.Status != stead.StatusRunning {
		r.t.Fatalf("resume: %+v", out)
	}
	// "late" takes no work: had the timeout overtaken an event, that event would be lost.
	exe = r.waitFor(id, "took the parked events and the timeout", func(e *stead.Execution) bool { return e.ActivePath == "late" })
	if got := r.seen(id); !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
		r.t.Fatalf("applied %v, want 1..5 in order before the timeout", got)
	}
	if exe.Status != stead.StatusRunning {
		r.t.Fatalf("status %s after resume", exe.Status)
	}
}

// testSuspendCancelCascade: a suspend reaches the region children at once; a cancel then
// cancels parent and children, none applying what was queued, each child's exit action once.
func testSuspendCancelCascade(r *opsRig) {
	const id = "tree"
	r.create(id)
	r.send(id, "fork", 0)
	r.waitFor(id, "in the parallel state", func(e *stead.Execution) bool { return e.ActivePath == "split" && len(e.Children) == 2 })
	kids := r.children(id)
	for _, k := range kids {
		r.waitFor(k, "started", func(e *stead.Execution) bool { return e.Status == stead.StatusRunning })
	}
	r.control(id, worker.Command{Op: worker.OpSuspend, ID: "freeze"})
	// The cascade is applied by the command itself, not queued behind the children's events.
	for _, k := range kids {
		if st := r.load(k).Status; st != stead.StatusSuspended {
			r.t.Fatalf("child %s is %s right after the parent's suspend, want suspended", k, st)
		}
	}
	for n := 1; n <= 3; n++ {
		r.send(id, "work", n)
		r.send(kids[0], "work", 10+n)
	}
	time.Sleep(150 * time.Millisecond)
	if got := r.seen(kids[0]); len(got) != 0 {
		r.t.Fatalf("a suspended child applied %v", got)
	}
	out := r.control(id, worker.Command{Op: worker.OpCancel, ID: "stop"})
	if out.Status != stead.StatusCancelling {
		r.t.Fatalf("cancel: %+v, want cancelling", out)
	}
	for _, k := range kids {
		if st := r.load(k).Status; st != stead.StatusCancelling && st != stead.StatusCancelled {
			r.t.Fatalf("child %s is %s right after the parent's cancel", k, st)
		}
	}
	for _, e := range append([]string{id}, kids...) {
		exe := r.waitFor(e, "cancelled", func(e *stead.Execution) bool { return e.Status == stead.StatusCancelled })
		if exe.FinishedAt.IsZero() || exe.Error != "" {
			r.t.Fatalf("%s cancelled with finish %v, error %q", e, exe.FinishedAt, exe.Error)
		}
		if got := r.seen(e); len(got) != 0 {
			r.t.Fatalf("%s applied %v of its backlog", e, got)
		}
	}
	for _, k := range kids {
		if n := r.world.released(k); n != 1 {
			r.t.Fatalf("child %s ran its exit action %d times, want once", k, n)
		}
	}
	if n := r.world.released(id); n != 1 { // it left "working" for "split" once; "split" has no exit
		r.t.Fatalf("the parent ran exit actions %d times, want once (leaving working)", n)
	}
	// After the cancel, events are dropped and commands refused.
	r.send(id, "work", 99)
	if _, err := r.client.Resume(context.Background(), id, ""); !errors.As(err, new(*stead.StatusError)) {
		r.t.Fatalf("resume of a cancelled execution: %v, want a status error", err)
	}
}

// testCancelDrains: the backlog queued before the cancel is dropped unapplied, then the cancel's
// own event ends the execution, leaving its state (its exit action runs once).
func testCancelDrains(r *opsRig) {
	const id = "drain"
	r.create(id)
	r.control(id, worker.Command{Op: worker.OpSuspend}) // holds the backlog in the queue
	for n := 1; n <= 4; n++ {
		r.send(id, "work", n)
	}
	r.control(id, worker.Command{Op: worker.OpCancel})
	exe := r.waitFor(id, "cancelled", func(e *stead.Execution) bool { return e.Status == stead.StatusCancelled })
	if got := r.seen(id); len(got) != 0 || exe.ActivePath != "working" {
		r.t.Fatalf("applied %v, at %q; want nothing, still at working", got, exe.ActivePath)
	}
	if n := r.world.released(id); n != 1 {
		r.t.Fatalf("exit action ran %d times, want once", n)
	}
	if ts, err := r.b.Store.Timers(context.Background(), id); err != nil || len(ts) != 0 {
		r.t.Fatalf("timers after the cancel: %v, %v", ts, err)
	}
}

// crashingBackend is the store of an operator's process that dies right after its command
// commits: every call after the first commit fails, as if the process were gone.
type crashingBackend struct {
	stead.Backend
	dead atomic.Bool
}

var errDied = errors.New("the operator's process died")

func (b *crashingBackend) Commit(ctx context.Context, w *stead.Write) ([]int64, error) {
	if b.dead.Load() {
		return nil, errDied
	}
	seqs, err := b.Backend.Commit(ctx, w)
	if err == nil {
		b.dead.Store(true)
	}
	return seqs, err
}

func (b *crashingBackend) LoadForEvent(ctx context.Context, ref stead.EventRef) (*stead.Execution, bool, error) {
	if b.dead.Load() {
		return nil, false, errDied
	}
	return b.Backend.LoadForEvent(ctx, ref)
}

func (b *crashingBackend) AckOutbox(ctx context.Context, seqs []int64) error {
	if b.dead.Load() {
		return errDied
	}
	return b.Backend.AckOutbox(ctx, seqs)
}

func (b *crashingBackend) PendingSpawns(ctx context.Context, parent string, limit int) ([]stead.SpawnEntry, error) {
	if b.dead.Load() {
		return nil, errDied
	}
	return b.Backend.PendingSpawns(ctx, parent, limit)
}

func (b *crashingBackend) Close() error { return nil } // the real store is the test's

// testRepeatAfterCrash: an operator's process commits a cancel of a tree and dies before
// delivering anything; the operator runs the same command again (same id), which changes
// nothing a second time but delivers what was left: the tree ends cancelled, each exit once.
func testRepeatAfterCrash(r *opsRig) {
	const id = "crash"
	r.create(id)
	r.send(id, "fork", 0)
	r.waitFor(id, "in the parallel state", func(e *stead.Execution) bool { return e.ActivePath == "split" && len(e.Children) == 2 })
	kids := r.children(id)
	for _, k := range kids {
		r.waitFor(k, "started", func(e *stead.Execution) bool { return e.Status == stead.StatusRunning })
	}
	dying := stead.NewStore(&crashingBackend{Backend: r.b.Store.Backend()})
	closed := memtransport.New()
	closed.Close() // nothing it publishes gets out either
	doomed := &worker.Client{Store: dying, Transport: closed, Known: r.client.Known, Clock: r.clock.Now}
	out, err := doomed.Cancel(context.Background(), id, "op-42")
	if err != nil || out.Status != stead.StatusCancelling {
		r.t.Fatalf("the doomed cancel: %+v, %v; want it committed (cancelling)", out, err)
	}
	time.Sleep(150 * time.Millisecond)
	for _, k := range kids {
		if st := r.load(k).Status; st != stead.StatusRunning {
			r.t.Fatalf("child %s is %s: the dead process delivered its cascade", k, st)
		}
	}
	if st := r.load(id).Status; st != stead.StatusCancelling {
		r.t.Fatalf("parent %s: its cancel's event left the dead process", st)
	}
	again, err := r.client.Cancel(context.Background(), id, "op-42")
	if err != nil || !again.Repeat {
		r.t.Fatalf("the repeated cancel: %+v, %v; want a repeat", again, err)
	}
	for _, e := range append([]string{id}, kids...) {
		r.waitFor(e, "cancelled", func(e *stead.Execution) bool { return e.Status == stead.StatusCancelled })
	}
	time.Sleep(100 * time.Millisecond) // room for a duplicate to show
	for _, k := range kids {
		if n := r.world.released(k); n != 1 {
			r.t.Fatalf("child %s ran its exit action %d times, want once", k, n)
		}
	}
	// A third time is a repeat again, on every member.
	if third, err := r.client.Cancel(context.Background(), kids[0], "op-42"); err != nil || !third.Repeat {
		r.t.Fatalf("the cascade's id on a child: %+v, %v; want a repeat", third, err)
	}
}

// testSetStateResetRetry moves an execution by hand: set-state (its exit and the timer of the
// state it left), reset (its start context, the timer armed again), and retry of a failure once
// its cause is gone.
func testSetStateResetRetry(r *opsRig) {
	ctx := context.Background()
	const id = "hand"
	r.create(id)
	r.send(id, "work", 1)
	r.waitFor(id, "applied work 1", func(*stead.Execution) bool { return slices.Equal(r.seen(id), []int{1}) })
	before := r.world.released(id)
	out := r.control(id, worker.Command{Op: worker.OpSetState, State: "late"})
	exe := r.load(id)
	if out.Status != stead.StatusRunning || exe.ActivePath != "late" || r.world.released(id) != before+1 {
		r.t.Fatalf("set-state: %+v at %q, exits %d; want running at late, one exit", out, exe.ActivePath, r.world.released(id)-before)
	}
	if ts, _ := r.b.Store.Timers(ctx, id); len(ts) != 0 {
		r.t.Fatalf("timers after leaving working: %v", ts)
	}
	r.control(id, worker.Command{Op: worker.OpReset})
	exe = r.load(id)
	if exe.ActivePath != "working" || len(r.seen(id)) != 0 {
		r.t.Fatalf("reset: at %q with %s; want working with the start context", exe.ActivePath, exe.Context)
	}
	if ts, _ := r.b.Store.Timers(ctx, id); len(ts) != 1 || ts[0].Path != "working" {
		r.t.Fatalf("timers after the reset: %v", ts)
	}
	r.send(id, "work", 2)
	r.waitFor(id, "applied work 2 after the reset", func(*stead.Execution) bool { return slices.Equal(r.seen(id), []int{2}) })

	r.world.broken.Store(true)
	r.send(id, "fail_now", 0)
	failed := r.waitFor(id, "failed", func(e *stead.Execution) bool { return e.Status == stead.StatusFailed })
	if failed.DeadLetter == nil || failed.DeadLetter.Event.Kind != "fail_now" || failed.DeadLetter.ActivePath != "working" {
		r.t.Fatalf("dead letter %+v", failed.DeadLetter)
	}
	if again := r.control(id, worker.Command{Op: worker.OpRetry, ID: "retry-1"}); again.Status != stead.StatusFailed {
		r.t.Fatalf("retry while broken: %+v, want failed again", again)
	}
	r.world.broken.Store(false)
	if done := r.control(id, worker.Command{Op: worker.OpRetry, ID: "retry-2"}); done.Status != stead.StatusRunning {
		r.t.Fatalf("retry once fixed: %+v", done)
	}
	if rep := r.control(id, worker.Command{Op: worker.OpRetry, ID: "retry-2"}); !rep.Repeat {
		r.t.Fatalf("the same retry again: %+v, want a repeat", rep)
	}
	exe = r.load(id)
	if exe.ActivePath != "broken" || exe.DeadLetter != nil || exe.Error != "" {
		r.t.Fatalf("after the retry: at %q, dead letter %+v, error %q", exe.ActivePath, exe.DeadLetter, exe.Error)
	}
	r.send(id, "work", 3)
	r.waitFor(id, "applied work 3 after the retry", func(*stead.Execution) bool { return slices.Equal(r.seen(id), []int{2, 3}) })
}

// testCommandsRaceSteps suspends and resumes an execution while a stream of events is applied:
// each command resolves by compare-and-swap against the steps, and every event applies once, in
// order.
func testCommandsRaceSteps(r *opsRig) {
	const id = "race"
	r.create(id)
	const n = 40
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1; i <= n; i++ {
			ev := stead.Event{ID: fmt.Sprintf("race-%d", i), Kind: "work", Data: fmt.Appendf(nil, `{"n":%d}`, i)}
			if _, err := r.client.Send(context.Background(), id, ev); err != nil {
				r.t.Error(err)
				return
			}
		}
	})
	for i := range 3 {
		if _, err := r.client.Suspend(context.Background(), id, fmt.Sprintf("race-s%d", i)); err != nil {
			r.t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
		if _, err := r.client.Resume(context.Background(), id, fmt.Sprintf("race-r%d", i)); err != nil {
			r.t.Fatal(err)
		}
	}
	wg.Wait()
	want := make([]int, n)
	for i := range want {
		want[i] = i + 1
	}
	r.waitFor(id, "applied every event", func(*stead.Execution) bool { return len(r.seen(id)) >= n })
	if got := r.seen(id); !slices.Equal(got, want) {
		r.t.Fatalf("applied %v, want 1..%d once each, in order", got, n)
	}
}

// testBadCommandsWriteNothing: an unknown state, a terminal execution, a command its status does
// not take, a missing execution and an empty batch selection are clear errors, and nothing is
// written.
func testBadCommandsWriteNothing(r *opsRig) {
	ctx := context.Background()
	const id = "bad"
	r.create(id)
	v := r.load(id).Version
	for _, c := range []struct {
		name string
		cmd  worker.Command
	}{
		{"an unknown state", worker.Command{Op: worker.OpSetState, State: "nowhere"}},
		{"a state inside a region", worker.Command{Op: worker.OpSetState, State: "split.left.l1"}},
		{"resume of a running execution", worker.Command{Op: worker.OpResume}},
		{"retry of a running execution", worker.Command{Op: worker.OpRetry}},
		{"a context that is not an object", worker.Command{Op: worker.OpReset, Context: json.RawMessage(`[1]`)}},
		{"an unknown command", worker.Command{Op: "explode"}},
		{"a state for suspend", worker.Command{Op: worker.OpSuspend, State: "late"}},
	} {
		if _, err := r.client.Control(ctx, id, c.cmd); !errors.Is(err, stead.ErrInvalid) {
			r.t.Fatalf("%s: %v, want ErrInvalid", c.name, err)
		}
		if got := r.load(id).Version; got != v {
			r.t.Fatalf("%s wrote version %d", c.name, got)
		}
	}
	if _, err := r.client.Suspend(ctx, "nobody", ""); !errors.Is(err, stead.ErrNotFound) {
		r.t.Fatalf("suspend of a missing execution: %v, want ErrNotFound", err)
	}
	r.control(id, worker.Command{Op: worker.OpCancel})
	r.waitFor(id, "cancelled", func(e *stead.Execution) bool { return e.Status == stead.StatusCancelled })
	v = r.load(id).Version
	for _, op := range worker.Ops() {
		cmd := worker.Command{Op: op}
		if op == worker.OpSetState {
			cmd.State = "late"
		}
		_, err := r.client.Control(ctx, id, cmd)
		var se *stead.StatusError
		if !errors.As(err, &se) || se.Status != stead.StatusCancelled {
			r.t.Fatalf("%s of a cancelled execution: %v, want a status error", op, err)
		}
	}
	if got := r.load(id).Version; got != v {
		r.t.Fatalf("commands on a cancelled execution wrote version %d", got)
	}
	if _, err := r.client.ControlMatching(ctx, stead.ListFilter{}, worker.Command{Op: worker.OpCancel}, worker.BatchOptions{}); !errors.Is(err, stead.ErrInvalid) {
		r.t.Fatalf("a batch without a selection: %v, want ErrInvalid", err)
	}
	if _, err := r.client.ControlMatching(ctx, stead.ListFilter{IDPrefix: "nobody-"}, worker.Command{Op: worker.OpCancel}, worker.BatchOptions{}); !errors.Is(err, stead.ErrNotFound) {
		r.t.Fatalf("a batch that matches nothing: %v, want ErrNotFound", err)
	}
	if _, err := r.client.Send(ctx, id, stead.Event{Kind: chart.KindSuspend}); !errors.Is(err, stead.ErrInvalid) {
		r.t.Fatalf("sending a control event: %v, want ErrInvalid", err)
	}
}
