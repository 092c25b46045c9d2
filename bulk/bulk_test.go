package bulk_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/bulk"
	"github.com/steadhq/stead/worker"
)

func running() []stead.Status { return []stead.Status{stead.StatusRunning} }

// TestBadSpecsWriteNothing checks that a spec that cannot run is ErrInvalid from DryRun and
// Start alike, and that Start then writes nothing.
func TestBadSpecsWriteNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t, backendCases[0])
	items := stead.ListFilter{DefinitionID: "item"}
	tests := []struct {
		name string
		spec bulk.Spec
	}{
		{"unknown op", bulk.Spec{Op: "explode", Filter: items}},
		{"empty filter", bulk.Spec{Op: bulk.OpCancel}},
		{"roots only is no criterion", bulk.Spec{Op: bulk.OpCancel, Filter: stead.ListFilter{RootsOnly: true}}},
		{"filter with a cursor", bulk.Spec{Op: bulk.OpCancel, Filter: stead.ListFilter{DefinitionID: "item", Cursor: "x"}}},
		{"filter with a limit", bulk.Spec{Op: bulk.OpCancel, Filter: stead.ListFilter{DefinitionID: "item", Limit: 5}}},
		{"bulk jobs as targets", bulk.Spec{Op: bulk.OpCancel, Filter: stead.ListFilter{DefinitionID: bulk.DefinitionID}}},
		{"empty window", bulk.Spec{Op: bulk.OpCancel, Filter: stead.ListFilter{Created: stead.TimeRange{
			From: time.Unix(100, 0), Before: time.Unix(100, 0)}}}},
		{"negative rate", bulk.Spec{Op: bulk.OpCancel, Filter: items, Rate: -1}},
		{"huge page", bulk.Spec{Op: bulk.OpCancel, Filter: items, PageSize: stead.MaxListLimit + 1}},
		{"set-state without a state", bulk.Spec{Op: bulk.OpSetState, Filter: items}},
		{"state on cancel", bulk.Spec{Op: bulk.OpCancel, Filter: items, State: "waiting"}},
		{"context on suspend", bulk.Spec{Op: bulk.OpSuspend, Filter: items, Context: json.RawMessage(`{}`)}},
		{"reset context not an object", bulk.Spec{Op: bulk.OpReset, Filter: items, Context: json.RawMessage(`[1]`)}},
		{"send without a kind", bulk.Spec{Op: bulk.OpSend, Filter: items}},
		{"send a control kind", bulk.Spec{Op: bulk.OpSend, Filter: items, EventKind: "stead.cancel_request"}},
		{"send a reserved kind", bulk.Spec{Op: bulk.OpSend, Filter: items, EventKind: "stead.finished"}},
		{"send bad data", bulk.Spec{Op: bulk.OpSend, Filter: items, EventKind: "bump", EventData: json.RawMessage(`{`)}},
		{"event on purge", bulk.Spec{Op: bulk.OpPurge, Filter: items, EventKind: "bump"}},
		{"id with a NUL", bulk.Spec{ID: "a\x00b", Op: bulk.OpCancel, Filter: items}},
		{"id too long", bulk.Spec{ID: strings.Repeat("j", bulk.MaxJobIDLen+1), Op: bulk.OpCancel, Filter: items}},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := bulk.DryRun(ctx, r.store, tt.spec); !errors.Is(err, stead.ErrInvalid) {
				t.Errorf("DryRun: %v, want ErrInvalid", err)
			}
			if _, err := bulk.Start(ctx, r.client, tt.spec); !errors.Is(err, stead.ErrInvalid) {
				t.Errorf("Start: %v, want ErrInvalid", err)
			}
		})
	}
	jobs, _, err := bulk.List(ctx, r.store, nil, 0, "")
	if err != nil || len(jobs) != 0 {
		t.Fatalf("jobs after refused starts: %v, %v; want none", jobs, err)
	}
	// A job created directly, past Start, is checked too.
	if _, err := r.client.Create(ctx, bulk.DefinitionID, "raw", json.RawMessage(`{"spec":{"op":"cancel"}}`)); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("Create with an empty filter: %v, want ErrInvalid", err)
	}
}

// TestJobs runs each operation as a job on every backend and checks what it did to every target
// and what its progress says.
func TestJobs(t *testing.T) {
	t.Parallel()
	for _, c := range backendCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, c)
			r.run(t)
			t.Run("cancel with refusals", func(t *testing.T) { testCancel(t, r) })
			t.Run("send applies once", func(t *testing.T) { testSend(t, r) })
			t.Run("suspend then resume", func(t *testing.T) { testSuspendResume(t, r) })
			t.Run("retry", func(t *testing.T) { testRetry(t, r) })
			t.Run("purge", func(t *testing.T) { testPurge(t, r) })
			t.Run("rate limit", func(t *testing.T) { testRate(t, r) })
			t.Run("pause, resume and cancel the job", func(t *testing.T) { testPauseCancel(t, r) })
		})
	}
}

func testCancel(t *testing.T, r *rig) {
	ctx := context.Background()
	ids := r.items(t, "c", 25)
	for _, id := range ids[:5] {
		r.send(t, id, "finish")
	}
	r.waitAll(t, ids[:5], "five finished", func(e *stead.Execution) bool { return e.Status == stead.StatusDone })
	spec := bulk.Spec{ID: "cancel-c", Op: bulk.OpCancel, PageSize: 7,
		Filter: stead.ListFilter{DefinitionID: "item", IDPrefix: "c-", RootsOnly: true}}
	est, err := bulk.DryRun(ctx, r.store, spec)
	if err != nil {
		t.Fatal(err)
	}
	if est.Matched != 25 || est.Eligible != 20 || est.ByStatus[stead.StatusDone] != 5 {
		t.Fatalf("dry run %+v: want 25 matched, 20 eligible, 5 done", est)
	}
	j, err := bulk.Start(ctx, r.client, spec)
	if err != nil {
		t.Fatal(err)
	}
	if j.ID != "cancel-c" || j.Progress.Total != 25 {
		t.Fatalf("started %+v", j)
	}
	if _, err := bulk.Start(ctx, r.client, spec); !errors.Is(err, stead.ErrAlreadyExists) {
		t.Fatalf("second start under the same id: %v, want ErrAlreadyExists", err)
	}
	j = r.job(t, j.ID, "the cancel job finished", finished)
	p := j.Progress
	if j.Status != stead.StatusDone || j.Outcome != bulk.OutcomeRefused || p.Done != 20 || p.Refused != 5 ||
		p.Remaining != 0 || p.Pages != 4 {
		t.Fatalf("job %+v: want done (refused), 20 done, 5 refused in 4 pages", j)
	}
	if got := p.Reasons["execution is done: it has ended"]; got != 5 || len(p.Refusals) != 5 || p.Refusals[0].ExecutionID != "c-000" {
		t.Fatalf("refusals %v %v", p.Reasons, p.Refusals)
	}
	r.waitAll(t, ids[5:], "the rest cancelled", func(e *stead.Execution) bool { return e.Status == stead.StatusCancelled })
}

func testSend(t *testing.T, r *rig) {
	ctx := context.Background()
	ids := r.items(t, "s", 30)
	j, err := bulk.Start(ctx, r.client, bulk.Spec{Op: bulk.OpSend, EventKind: "bump", PageSize: 4,
		Filter: stead.ListFilter{IDPrefix: "s-", Statuses: running()}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(j.ID, "bulk-") {
		t.Fatalf("generated job id %q", j.ID)
	}
	j = r.job(t, j.ID, "the send job finished", finished)
	if j.Outcome != bulk.OutcomeSuccess || j.Progress.Done != 30 || j.Progress.Refused != 0 {
		t.Fatalf("job %+v", j)
	}
	r.waitAll(t, ids, "every item bumped", func(e *stead.Execution) bool { return counted(e) >= 1 })
	// Sending the same page again (what a crash does) applies nothing twice.
	for _, id := range ids[:3] {
		if _, err := r.client.Send(ctx, id, stead.Event{ID: bulk.CommandID(j.ID), Kind: "bump"}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	for _, id := range ids {
		if n := counted(r.load(t, id)); n != 1 {
			t.Fatalf("%s counted %v bumps, want 1", id, n)
		}
	}
}

// counted is the item's count of applied bumps.
func counted(e *stead.Execution) float64 {
	var c struct{ N float64 }
	_ = json.Unmarshal(e.Context, &c)
	return c.N
}

func testSuspendResume(t *testing.T, r *rig) {
	ctx := context.Background()
	ids := r.items(t, "p", 12)
	f := stead.ListFilter{IDPrefix: "p-", RootsOnly: true}
	j, err := bulk.Start(ctx, r.client, bulk.Spec{Op: bulk.OpSuspend, Filter: f, PageSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	if j = r.job(t, j.ID, "suspended", finished); j.Progress.Done != 12 {
		t.Fatalf("suspend job %+v", j)
	}
	r.waitAll(t, ids, "all suspended", func(e *stead.Execution) bool { return e.Status == stead.StatusSuspended })
	j, err = bulk.Start(ctx, r.client, bulk.Spec{Op: bulk.OpResume, Filter: f})
	if err != nil {
		t.Fatal(err)
	}
	if j = r.job(t, j.ID, "resumed", finished); j.Progress.Done != 12 || j.Progress.Pages != 1 {
		t.Fatalf("resume job %+v", j)
	}
	r.waitAll(t, ids, "all running", func(e *stead.Execution) bool { return e.Status == stead.StatusRunning })
}

func testRetry(t *testing.T, r *rig) {
	ctx := context.Background()
	ids := r.items(t, "r", 6)
	for _, id := range ids[:4] {
		r.send(t, id, "explode")
	}
	r.waitAll(t, ids[:4], "four failed", func(e *stead.Execution) bool { return e.Status == stead.StatusFailed })
	j, err := bulk.Start(ctx, r.client, bulk.Spec{Op: bulk.OpRetry, Filter: stead.ListFilter{IDPrefix: "r-"}})
	if err != nil {
		t.Fatal(err)
	}
	j = r.job(t, j.ID, "retried", finished)
	if j.Progress.Done != 4 || j.Progress.Refused != 2 || j.Progress.Reasons["execution is running: only a failed execution is retried"] != 2 {
		t.Fatalf("retry job %+v", j)
	}
	// Each failed item applied the retry once: its dead letter failed it again.
	for _, id := range ids[:4] {
		if exe := r.load(t, id); exe.Status != stead.StatusFailed {
			t.Fatalf("%s is %s after its retry", id, exe.Status)
		}
	}
}

func testPurge(t *testing.T, r *rig) {
	ctx := context.Background()
	ids := r.items(t, "g", 8)
	for _, id := range ids[:6] {
		r.send(t, id, "finish")
	}
	r.waitAll(t, ids[:6], "six finished", func(e *stead.Execution) bool { return e.Status == stead.StatusDone })
	j, err := bulk.Start(ctx, r.client, bulk.Spec{Op: bulk.OpPurge, Filter: stead.ListFilter{IDPrefix: "g-"}})
	if err != nil {
		t.Fatal(err)
	}
	j = r.job(t, j.ID, "purged", finished)
	if j.Progress.Done != 6 || j.Progress.Refused != 2 {
		t.Fatalf("purge job %+v", j)
	}
	for i, id := range ids {
		_, err := r.store.Load(ctx, id)
		if gone := errors.Is(err, stead.ErrNotFound); gone != (i < 6) {
			t.Fatalf("%s: load after purge: %v", id, err)
		}
	}
}

func testRate(t *testing.T, r *rig) {
	ctx := context.Background()
	r.items(t, "t", 40)
	const rate = 40.0
	began := time.Now()
	j, err := bulk.Start(ctx, r.client, bulk.Spec{Op: bulk.OpSend, EventKind: "bump", Rate: rate, PageSize: 10,
		Filter: stead.ListFilter{IDPrefix: "t-"}})
	if err != nil {
		t.Fatal(err)
	}
	j = r.job(t, j.ID, "the rate-limited job finished", finished)
	took := time.Since(began)
	// Four pages of ten, each followed by a quarter-second timer but the last: at least 0.75 s.
	if j.Progress.Done != 40 || j.Progress.Pages != 4 || took < 750*time.Millisecond {
		t.Fatalf("job %+v took %v: want 40 in 4 pages over at least 0.75 s", j, took)
	}
	exe := r.load(t, j.ID)
	if len(exe.Timers) != 0 {
		t.Fatalf("finished job keeps timers %v", exe.Timers)
	}
	if left, err := r.store.DueTimers(ctx, time.Now().Add(time.Hour), 10); err != nil || len(left) != 0 {
		t.Fatalf("timers left armed: %v, %v", left, err)
	}
}

func testPauseCancel(t *testing.T, r *rig) {
	ctx := context.Background()
	ids := r.items(t, "q", 60)
	j, err := bulk.Start(ctx, r.client, bulk.Spec{ID: "slow", Op: bulk.OpSend, EventKind: "bump", Rate: 10, PageSize: 5,
		Filter: stead.ListFilter{IDPrefix: "q-"}})
	if err != nil {
		t.Fatal(err)
	}
	r.job(t, j.ID, "a first page", func(j bulk.Job) bool { return j.Progress.Done > 0 })
	if j, err = bulk.Pause(ctx, r.client, j.ID); err != nil || j.Status != stead.StatusSuspended {
		t.Fatalf("pause: %+v, %v", j, err)
	}
	time.Sleep(1200 * time.Millisecond) // more than a page's timer (0.5 s): a page would have been applied
	paused, err := bulk.Get(ctx, r.store, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if paused.Progress.Done != j.Progress.Done || paused.Progress.Remaining == 0 {
		t.Fatalf("a paused job moved from %d to %d", j.Progress.Done, paused.Progress.Done)
	}
	if j, err = bulk.Resume(ctx, r.client, j.ID); err != nil || j.Status != stead.StatusRunning {
		t.Fatalf("resume: %+v, %v", j, err)
	}
	r.job(t, j.ID, "progress after the resume", func(j bulk.Job) bool { return j.Progress.Done > paused.Progress.Done })
	if _, err = bulk.Cancel(ctx, r.client, j.ID); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	j = r.job(t, j.ID, "cancelled", func(j bulk.Job) bool { return j.Status == stead.StatusCancelled })
	time.Sleep(1200 * time.Millisecond)
	after, err := bulk.Get(ctx, r.store, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Progress.Done != j.Progress.Done || after.Progress.Done >= 60 || after.Progress.Remaining != 0 {
		t.Fatalf("after the cancel %+v (at the cancel %+v)", after.Progress, j.Progress)
	}
	// Exactly the targets the job counted got their bump, once each.
	bumped := 0
	for _, id := range ids {
		switch n := counted(r.load(t, id)); n {
		case 0:
		case 1:
			bumped++
		default:
			t.Fatalf("%s counted %v bumps", id, n)
		}
	}
	if int64(bumped) != after.Progress.Done {
		t.Fatalf("%d items bumped, the job says %d", bumped, after.Progress.Done)
	}
	// A finished job takes no command; the listing shows it.
	if _, err := bulk.Pause(ctx, r.client, j.ID); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("pause of a cancelled job: %v, want ErrInvalid", err)
	}
	jobs, _, err := bulk.List(ctx, r.store, []stead.Status{stead.StatusCancelled}, 0, "")
	if err != nil || len(jobs) != 1 || jobs[0].ID != "slow" {
		t.Fatalf("cancelled jobs: %+v, %v", jobs, err)
	}
	if _, err := bulk.Get(ctx, r.store, ids[0]); !errors.Is(err, stead.ErrNotFound) {
		t.Fatalf("Get of an item: %v, want ErrNotFound", err)
	}
}

// TestCommandID checks that a job's targets all apply one command id, derived from the job's.
func TestCommandID(t *testing.T) {
	if got := bulk.CommandID("j-1"); got != "bulk:j-1" {
		t.Fatalf("CommandID = %q", got)
	}
	if len(bulk.CommandID(strings.Repeat("j", bulk.MaxJobIDLen))) > worker.MaxCommandIDLen {
		t.Fatal("the longest job id makes a command id that is too long")
	}
}

// TestSpecRoundTrip checks that a job stores its whole filter: what Get returns selects what
// Start was given. A field added to stead.ListFilter must survive its JSON to be stored here.
func TestSpecRoundTrip(t *testing.T) {
	t.Parallel()
	r := newRig(t, backendCases[0])
	at := time.Date(2026, 7, 1, 12, 30, 0, 123000, time.UTC)
	spec := bulk.Spec{ID: "round", Op: bulk.OpSend, EventKind: "bump", EventData: json.RawMessage(`{"by":"ops"}`),
		Rate: 2.5, PageSize: 7, Filter: stead.ListFilter{
			DefinitionID: "item", Statuses: []stead.Status{stead.StatusRunning, stead.StatusSuspended},
			RootsOnly: true, IDPrefix: "a%_\\",
			Created:  stead.TimeRange{From: at, Before: at.Add(time.Hour)},
			Updated:  stead.TimeRange{Before: at},
			Finished: stead.TimeRange{From: at},
		}}
	if _, err := bulk.Start(context.Background(), r.client, spec); err != nil {
		t.Fatal(err)
	}
	j, err := bulk.Get(context.Background(), r.store, "round")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(j.Spec)
	want, _ := json.Marshal(spec)
	if string(got) != string(want) || !j.Spec.Filter.Created.From.Equal(at) || j.Spec.ID != "round" || j.Status != stead.StatusPending {
		t.Fatalf("stored spec\n%s\nwant\n%s", got, want)
	}
	// A client that does not know the bulk machine is told so.
	bare := &worker.Client{Store: r.store, Transport: r.tr, Known: worker.Machines{"item": r.machines["item"]}}
	if _, err := bulk.Start(context.Background(), bare, bulk.Spec{Op: bulk.OpCancel, Filter: stead.ListFilter{DefinitionID: "item"}}); !errors.Is(err, stead.ErrInvalid) ||
		!strings.Contains(err.Error(), "bulk.Register") {
		t.Fatalf("start without the bulk machine: %v", err)
	}
}
