package bulk_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/bulk"
)

// envKillN sizes TestKillMidJobAtScale by hand (bench/results/bulk.md has a run's figures).
const envKillN = "STEAD_BULK_KILL_N"

// TestKillMidJobAtScale is the crash test at a size where a job spans many pages: a bulk cancel of
// some thousands of running executions runs in a worker process, which is SIGKILLed mid-job,
// likely in a page's step; a second process finishes the job. Every target is cancelled exactly
// once — its cancel's command id (bulk.CommandID of the job) processed, the same version and one
// trace step of that command on every one of them — and the job's counts add up: every target
// done, none refused, one page counted per page of the listing, and repeats (the targets of the
// step the kill cut, applied again) at most a page.
func TestKillMidJobAtScale(t *testing.T) {
	t.Parallel()
	n := 2000
	if raceEnabled {
		n = 1000 // the race detector slows SQLite's Go driver several times over
	}
	if v := os.Getenv(envKillN); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", envKillN, v)
		}
	}
	const pageSize = 50
	for _, c := range []backendCase{backendCases[1], backendCases[2]} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, c)
			ctx := context.Background()
			ids := storeRunning(t, r.store, "x", n)

			first := r.startProcess(t, "first")
			began := time.Now()
			j, err := bulk.Start(ctx, r.client, bulk.Spec{Op: bulk.OpCancel, PageSize: pageSize,
				Filter: stead.ListFilter{DefinitionID: "item", Statuses: running(), RootsOnly: true}})
			if err != nil {
				t.Fatal(err)
			}
			if j.Progress.Total != int64(n) {
				t.Fatalf("the dry run counted %d targets, want %d", j.Progress.Total, n)
			}
			within := time.Minute + time.Duration(n)*50*time.Millisecond // for sizes given by hand
			jobWithin(t, r, j.ID, within, "the first worker applied a third", func(j bulk.Job) bool { return j.Progress.Done >= int64(n/3) })
			if err := first.stop(t, syscall.SIGKILL); err == nil {
				t.Fatal("the first worker exited cleanly on SIGKILL")
			}
			at, err := bulk.Get(ctx, r.store, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if at.Status.Finished() || at.Progress.Done >= int64(n) {
				t.Fatalf("the job was over before the kill (%+v): the test proves nothing", at.Progress)
			}
			killed := time.Since(began)

			second := r.startProcess(t, "second")
			j = jobWithin(t, r, j.ID, within, "the second worker finished the job", finished)
			took := time.Since(began)
			p := j.Progress
			pages := int64((n + pageSize - 1) / pageSize)
			if j.Status != stead.StatusDone || j.Outcome != bulk.OutcomeSuccess || p.Total != int64(n) || p.Done != int64(n) ||
				p.Refused != 0 || p.Remaining != 0 || p.Pages != pages || p.Repeats > pageSize {
				t.Fatalf("job %s %s: %+v; want %d done in %d pages, none refused, at most %d repeats",
					j.Status, j.Outcome, p, n, pages, pageSize)
			}
			waitUntil(t, within, "every target cancelled", func() bool {
				c, err := r.store.Count(ctx, stead.ListFilter{DefinitionID: "item", Statuses: []stead.Status{stead.StatusCancelled}})
				return err == nil && c.Total == int64(n)
			})
			if err := second.stop(t, syscall.SIGTERM); err != nil {
				t.Fatalf("the second worker did not stop cleanly: %v", err)
			}
			cmd := bulk.CommandID(j.ID)
			var version int64
			for _, id := range ids {
				exe := r.load(t, id)
				if version == 0 {
					version = exe.Version
				}
				if exe.Version != version {
					t.Fatalf("%s is at version %d, %s at %d: a command applied twice moves a version", id, exe.Version, ids[0], version)
				}
				ok, err := r.store.IsProcessed(ctx, id, cmd)
				if err != nil || !ok {
					t.Fatalf("%s: the job's command %q processed = %v, %v", id, cmd, ok, err)
				}
				steps, err := r.store.ReadTrace(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				applied := 0
				for _, st := range steps {
					if st.EventID == cmd {
						applied++
					}
				}
				if applied != 1 {
					t.Fatalf("%s: %d trace steps of the job's command, want 1: %+v", id, applied, steps)
				}
			}
			t.Logf("%s: %d targets, %d pages of %d: killed at %d done (%.1fs), done at %.1fs with %d repeats",
				c.name, n, pages, pageSize, at.Progress.Done, killed.Seconds(), took.Seconds(), p.Repeats)
		})
	}
}

// storeRunning stores n running items (in their state "waiting", as their start would leave them)
// in batches, faster than starting them through a worker.
func storeRunning(t *testing.T, s *stead.Store, prefix string, n int) []string {
	t.Helper()
	now := time.Now().UTC()
	ids := make([]string, 0, n)
	for i := 0; i < n; i += stead.MaxBatch {
		var items []stead.CommitItem
		for k := i; k < min(n, i+stead.MaxBatch); k++ {
			id := fmt.Sprintf("%s-%06d", prefix, k)
			ids = append(ids, id)
			items = append(items, stead.CommitItem{Execution: &stead.Execution{ID: id, DefinitionID: "item",
				Status: stead.StatusRunning, ActivePath: "waiting", CreatedAt: now, UpdatedAt: now}})
		}
		res, err := s.CommitBatch(context.Background(), items)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	return ids
}

// jobWithin is rig.job with a deadline of its own.
func jobWithin(t *testing.T, r *rig, id string, within time.Duration, what string, cond func(bulk.Job) bool) bulk.Job {
	t.Helper()
	var j bulk.Job
	waitUntil(t, within, what, func() bool {
		var err error
		j, err = bulk.Get(context.Background(), r.store, id)
		return err == nil && cond(j)
	}, func() string { return fmt.Sprintf("job %s: %+v", id, j) })
	return j
}
