package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/worker"
)

const dryFlow = `
id: flow
initial: idle
states:
  idle:
    on:
      go: work
  work:
    entry: [touch]
    on:
      finish: end
  end: {final: success}
`

// dryFixture is a mix of executions every command meets: of a definition the client runs
// (flow), at each status, failed with and without a dead letter, and of one it lacks (other).
var dryFixture = []struct {
	id, def string
	status  stead.Status
	path    string
	dead    bool
}{
	{"f-done", "flow", stead.StatusDone, "end", false},
	{"f-failed", "flow", stead.StatusFailed, "idle", true},
	{"f-failed-bare", "flow", stead.StatusFailed, "idle", false},
	{"f-running", "flow", stead.StatusRunning, "idle", false},
	{"f-running-work", "flow", stead.StatusRunning, "work", false},
	{"f-suspended", "flow", stead.StatusSuspended, "idle", false},
	{"o-failed", "other", stead.StatusFailed, "idle", true},
	{"o-running", "other", stead.StatusRunning, "idle", false},
	{"o-suspended", "other", stead.StatusSuspended, "idle", false},
}

func seedDryFixture(t *testing.T, s *stead.Store) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, f := range dryFixture {
		exe := &stead.Execution{ID: f.id, DefinitionID: f.def, Status: f.status, ActivePath: f.path,
			Context: json.RawMessage(`{}`), CreatedAt: now, UpdatedAt: now}
		switch f.status {
		case stead.StatusDone:
			exe.Outcome, exe.FinishedAt = "success", now
		case stead.StatusFailed:
			exe.Error, exe.FinishedAt = "an action failed", now
		}
		if f.dead {
			exe.DeadLetter = &stead.DeadLetter{Event: stead.Event{ID: "ev-go-" + f.id, Kind: "go", CreatedAt: now},
				Status: stead.StatusRunning, ActivePath: "idle", Context: json.RawMessage(`{}`)}
		}
		if _, err := s.Commit(context.Background(), exe, stead.Bundle{}); err != nil {
			t.Fatalf("seed %s: %v", f.id, err)
		}
	}
}

// dryBackends are the stores the agreement runs on: memory, SQLite and PostgreSQL, a fresh one
// per case.
var dryBackends = []struct {
	name string
	open func(t *testing.T) *testBackend
}{
	{"memory", func(t *testing.T) *testBackend {
		s, tr := memstore.New(), memtransport.New()
		t.Cleanup(func() { tr.Close(); s.Close() })
		return &testBackend{Store: s, Transport: tr}
	}},
	{"sqlite", func(t *testing.T) *testBackend {
		b, err := openBackend(context.Background(), filepath.Join(t.TempDir(), "dry.db"), "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}},
	{"postgres", func(t *testing.T) *testBackend { // skipped without STEAD_TEST_DATABASE_URL
		b, _, _ := openCase(t, backendCase{name: "postgres", spec: pgSpec, batch: 1})
		return b
	}},
}

// TestDryRunAgrees runs each command's dry run and then the command itself on the same
// selection of the same executions, and checks they agree execution by execution: what the dry
// run would apply is what the command applies, and each refusal has the same reason. The dry run
// writes nothing and runs no action.
func TestDryRunAgrees(t *testing.T) {
	t.Parallel()
	every := []stead.Status{stead.StatusPending, stead.StatusRunning, stead.StatusSuspended, stead.StatusFailed,
		stead.StatusCancelling, stead.StatusDone, stead.StatusCancelled}
	selections := map[string]stead.ListFilter{
		"every status":  {Statuses: every},
		"failed":        {Statuses: []stead.Status{stead.StatusFailed}},
		"unknown def":   {DefinitionID: "other"},
		"prefix f- one": {IDPrefix: "f-", Limit: 1}, // one execution a page
	}
	commands := []worker.Command{
		{Op: worker.OpSuspend}, {Op: worker.OpResume}, {Op: worker.OpCancel}, {Op: worker.OpReset},
		{Op: worker.OpSetState, State: "work"}, {Op: worker.OpSetState, State: "nowhere"}, {Op: worker.OpRetry},
	}
	for _, be := range dryBackends {
		for selName, sel := range selections {
			for _, cmd := range commands {
				name := fmt.Sprintf("%s/%s/%s %s", be.name, selName, cmd.Op, cmd.State)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					ctx := context.Background()
					b := be.open(t)
					seedDryFixture(t, b.Store)
					known, touched := dryMachines(t)
					client := &worker.Client{Store: b.Store, Transport: b.Transport, Known: known}
					cmd.ID = "c-1"
					before := versions(t, b.Store)
					touchedBefore := touched.Load()
					dry, derr := client.ControlMatching(ctx, sel, cmd, worker.BatchOptions{DryRun: true})
					if after := versions(t, b.Store); !maps.Equal(before, after) {
						t.Fatalf("the dry run wrote: versions %v, then %v", before, after)
					}
					if n := touched.Load() - touchedBefore; n != 0 {
						t.Fatalf("the dry run ran %d actions", n)
					}
					real, rerr := client.ControlMatching(ctx, sel, cmd, worker.BatchOptions{})
					if (derr == nil) != (rerr == nil) {
						t.Fatalf("dry run error %v, command error %v", derr, rerr)
					}
					if dry.Matched != real.Matched || dry.Applied != real.Applied || dry.Repeats != real.Repeats {
						t.Fatalf("dry run %+v, command %+v: they disagree", dry, real)
					}
					if got, want := refusals(dry), refusals(real); !slices.Equal(got, want) {
						t.Fatalf("dry run refused\n  %q\nthe command refused\n  %q", got, want)
					}
					// What the command applied changed version; what it refused did not.
					after := versions(t, b.Store)
					refused := map[string]bool{}
					for _, r := range real.Refused {
						refused[r.ExecutionID] = true
					}
					changed := 0
					for id, v := range after {
						if v != before[id] {
							changed++
							if refused[id] {
								t.Errorf("%s was refused and changed", id)
							}
						}
					}
					if changed != real.Applied {
						t.Errorf("%d executions changed, the report says %d applied", changed, real.Applied)
					}
					// Executions of a definition the client lacks are refused for that, by both,
					// with an error callers can check.
					for _, r := range dry.Refused {
						var me *worker.MachineError
						if errors.As(r.Err, &me) {
							if me.DefinitionID != "other" || !errors.Is(r.Err, stead.ErrInvalid) {
								t.Errorf("%s: %v", r.ExecutionID, r.Err)
							}
						}
					}
				})
			}
		}
	}
}

// TestCheckControlAgrees is the same agreement one execution at a time: Client.CheckControl,
// then Client.Control, on each execution of the fixture.
func TestCheckControlAgrees(t *testing.T) {
	t.Parallel()
	type want struct {
		applied bool
		machine bool // refused for want of the machine
	}
	cases := []struct {
		cmd  worker.Command
		want map[string]want // the executions that take it or lack the machine; the rest refused
	}{
		{worker.Command{Op: worker.OpRetry}, map[string]want{"f-failed": {applied: true}, "o-failed": {machine: true}}},
		{worker.Command{Op: worker.OpSetState, State: "work"}, map[string]want{
			"f-failed": {applied: true}, "f-failed-bare": {applied: true}, "f-running": {applied: true},
			"f-running-work": {applied: true}, "f-suspended": {applied: true},
			"o-failed": {machine: true}, "o-running": {machine: true}, "o-suspended": {machine: true}}},
		{worker.Command{Op: worker.OpSetState, State: "nowhere"}, map[string]want{
			"o-failed": {machine: true}, "o-running": {machine: true}, "o-suspended": {machine: true}}},
		{worker.Command{Op: worker.OpSuspend}, map[string]want{
			"f-running": {applied: true}, "f-running-work": {applied: true}, "o-running": {applied: true}}},
	}
	for _, be := range dryBackends {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s %s", be.name, c.cmd.Op, c.cmd.State), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				b := be.open(t)
				seedDryFixture(t, b.Store)
				known, _ := dryMachines(t)
				client := &worker.Client{Store: b.Store, Transport: b.Transport, Known: known}
				cmd := c.cmd
				cmd.ID = "c-1"
				for _, f := range dryFixture {
					dry, derr := client.CheckControl(ctx, f.id, cmd)
					real, rerr := client.Control(ctx, f.id, cmd)
					if fmt.Sprint(derr) != fmt.Sprint(rerr) {
						t.Errorf("%s: dry run %v, command %v", f.id, derr, rerr)
					}
					w := c.want[f.id]
					if got := rerr == nil; got != w.applied {
						t.Errorf("%s: applied %v (%v), want %v", f.id, got, rerr, w.applied)
					}
					var me *worker.MachineError
					if got := errors.As(rerr, &me); got != w.machine {
						t.Errorf("%s: %v, want a *MachineError: %v", f.id, rerr, w.machine)
					}
					if rerr != nil && !errors.Is(rerr, stead.ErrInvalid) {
						t.Errorf("%s: %v, want ErrInvalid", f.id, rerr)
					}
					if derr == nil && (dry.Repeat || dry.ExecutionID != f.id || real.Repeat) {
						t.Errorf("%s: dry %+v, real %+v", f.id, dry, real)
					}
					if rerr == nil {
						// Applied: both now say it was applied before.
						if o, err := client.CheckControl(ctx, f.id, cmd); err != nil || !o.Repeat {
							t.Errorf("%s: a dry run after the command: %+v, %v; want a repeat", f.id, o, err)
						}
					}
				}
			})
		}
	}
}

// dryMachines is a client's machines: flow, whose entry action counts its runs, and no other.
func dryMachines(t *testing.T) (worker.Machines, *atomic.Int64) {
	t.Helper()
	def, err := chart.Parse("flow.yaml", []byte(dryFlow))
	if err != nil {
		t.Fatal(err)
	}
	touched := new(atomic.Int64)
	reg := chart.NewRegistry().Action("touch", func(chart.ActionContext) (chart.ActionResult, error) {
		touched.Add(1)
		return chart.ActionResult{}, nil
	})
	eng, err := chart.NewEngine(def, reg)
	if err != nil {
		t.Fatal(err)
	}
	return worker.Machines{"flow": eng}, touched
}

func versions(t *testing.T, s *stead.Store) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, f := range dryFixture {
		exe, err := s.Load(context.Background(), f.id)
		if err != nil {
			t.Fatal(err)
		}
		out[f.id] = exe.Version
	}
	return out
}

func refusals(r worker.BatchReport) []string {
	var out []string
	for _, x := range r.Refused {
		out = append(out, x.ExecutionID+": "+x.Err.Error())
	}
	return out
}
