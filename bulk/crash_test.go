package bulk_test

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/bulk"
	"github.com/steadhq/stead/worker"
)

// losing is the bulk machine with the commits of its first pages lost: the first run of each of
// the first `lose` page steps applies its page, then fails as a worker killed before its commit
// would, and the worker runs the step again.
type losing struct {
	worker.Machine
	lose  int64
	steps atomic.Int64
	lost  atomic.Int64
}

func (m *losing) Step(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	next, b, err := m.Machine.Step(exe, ev, now)
	if err == nil && ev.Kind == bulk.KindPage {
		if k := m.steps.Add(1); k <= 2*m.lose && k%2 == 1 {
			m.lost.Add(1)
			return nil, stead.Bundle{}, errors.New("the commit was lost")
		}
	}
	return next, b, err
}

func (m *losing) reset(lose int64) {
	m.lose = lose
	m.steps.Store(0)
	m.lost.Store(0)
}

// TestLostCommitsApplyNothingTwice applies every page of a job twice — the first run's commit
// lost after its targets were applied — and checks that each target applied the operation once
// and that the job counts each once.
func TestLostCommitsApplyNothingTwice(t *testing.T) {
	t.Parallel()
	for _, c := range backendCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, c)
			m := &losing{Machine: r.machines[bulk.DefinitionID], lose: 3}
			r.machines[bulk.DefinitionID] = m
			r.run(t)
			ids := r.items(t, "l", 20)
			j, err := bulk.Start(context.Background(), r.client, bulk.Spec{Op: bulk.OpSend, EventKind: "bump", PageSize: 6,
				Filter: stead.ListFilter{DefinitionID: "item"}})
			if err != nil {
				t.Fatal(err)
			}
			j = r.job(t, j.ID, "the job finished", finished)
			if m.lost.Load() != 3 {
				t.Fatalf("%d page commits lost, want 3", m.lost.Load())
			}
			if j.Progress.Done != 20 || j.Progress.Refused != 0 || j.Progress.Pages != 4 {
				t.Fatalf("job %+v: want 20 done in 4 pages", j.Progress)
			}
			r.waitAll(t, ids, "every item bumped", func(e *stead.Execution) bool { return counted(e) >= 1 })
			time.Sleep(100 * time.Millisecond)
			for _, id := range ids {
				if n := counted(r.load(t, id)); n != 1 {
					t.Fatalf("%s applied %v bumps, want 1", id, n)
				}
			}
			// A cancel moves its targets out of a filter on "running": the re-run step applies
			// the ids the lost run applied (repeats) rather than a fresh listing, which would
			// no longer hold them, so the count stays exact.
			m.reset(3)
			j, err = bulk.Start(context.Background(), r.client, bulk.Spec{Op: bulk.OpCancel, PageSize: 6,
				Filter: stead.ListFilter{DefinitionID: "item", Statuses: running()}})
			if err != nil {
				t.Fatal(err)
			}
			j = r.job(t, j.ID, "the cancel job finished", finished)
			if m.lost.Load() != 3 || j.Progress.Done != 20 || j.Progress.Repeats != 18 || j.Progress.Refused != 0 {
				t.Fatalf("cancel job %+v (%d commits lost): want 20 done, 18 of them repeats", j.Progress, m.lost.Load())
			}
			r.waitAll(t, ids, "every item cancelled", func(e *stead.Execution) bool { return e.Status == stead.StatusCancelled })
		})
	}
}

// TestWorkerProcessLostMidJob runs a job in a worker process, takes that process away mid-job —
// killed, stopped gracefully, or frozen (SIGSTOP) past its lease — and lets another process
// finish the job: every target applies the operation once, and the job counts each once.
func TestWorkerProcessLostMidJob(t *testing.T) {
	t.Parallel()
	cases := []struct {
		backend backendCase
		sig     os.Signal
	}{
		{backendCases[1], syscall.SIGKILL},
		{backendCases[1], syscall.SIGTERM},
		{backendCases[2], syscall.SIGKILL},
		{backendCases[3], syscall.SIGSTOP},
	}
	for _, c := range cases {
		t.Run(c.backend.name+" "+c.sig.String(), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, c.backend)
			first := r.startProcess(t, "first")
			const n = 150
			ids := r.items(t, "k", n)
			j, err := bulk.Start(context.Background(), r.client, bulk.Spec{Op: bulk.OpSend, EventKind: "bump",
				Rate: 100, PageSize: 10, Filter: stead.ListFilter{DefinitionID: "item", Statuses: running()}})
			if err != nil {
				t.Fatal(err)
			}
			r.job(t, j.ID, "the first worker applied some pages", func(j bulk.Job) bool { return j.Progress.Done >= 30 })
			if c.sig == syscall.SIGSTOP {
				if err := first.cmd.Process.Signal(c.sig); err != nil {
					t.Fatal(err)
				}
			} else {
				err := first.stop(t, c.sig)
				if c.sig == syscall.SIGTERM && err != nil {
					t.Fatalf("worker did not stop cleanly on SIGTERM: %v", err)
				}
			}
			at, err := bulk.Get(context.Background(), r.store, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if at.Status.Finished() {
				t.Fatal("the job finished before the first worker went away: the test proves nothing")
			}
			second := r.startProcess(t, "second")
			j = r.job(t, j.ID, "the second worker finished the job", finished)
			if j.Status != stead.StatusDone || j.Progress.Done != n || j.Progress.Refused != 0 {
				t.Fatalf("job %+v: want %d done", j, n)
			}
			r.waitAll(t, ids, "every item bumped", func(e *stead.Execution) bool { return counted(e) >= 1 })
			if err := second.stop(t, syscall.SIGTERM); err != nil {
				t.Fatalf("second worker did not stop cleanly: %v", err)
			}
			for _, id := range ids {
				if got := counted(r.load(t, id)); got != 1 {
					t.Fatalf("%s applied %v bumps, want 1", id, got)
				}
			}
			t.Logf("%d of %d done when the first worker went away", at.Progress.Done, n)
		})
	}
}
