package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
)

// TestAdmitCommand is the table of which status takes which command.
func TestAdmitCommand(t *testing.T) {
	t.Parallel()
	statuses := []stead.Status{stead.StatusPending, stead.StatusRunning, stead.StatusSuspended, stead.StatusFailed,
		stead.StatusCancelling, stead.StatusDone, stead.StatusCancelled}
	takes := map[Op][]stead.Status{
		OpSuspend:  {stead.StatusRunning},
		OpResume:   {stead.StatusSuspended},
		OpCancel:   {stead.StatusPending, stead.StatusRunning, stead.StatusSuspended, stead.StatusFailed},
		OpReset:    {stead.StatusRunning, stead.StatusSuspended, stead.StatusFailed},
		OpSetState: {stead.StatusRunning, stead.StatusSuspended, stead.StatusFailed},
		OpRetry:    {stead.StatusFailed},
	}
	for _, op := range Ops() {
		for _, st := range statuses {
			err := admitCommand(&stead.Execution{ID: "e", Status: st}, op)
			want := slices.Contains(takes[op], st)
			var se *stead.StatusError
			switch {
			case want && err != nil:
				t.Errorf("%s of a %s execution: %v, want it taken", op, st, err)
			case !want && (!errors.As(err, &se) || se.Status != st || se.Op != string(op)):
				t.Errorf("%s of a %s execution: %v, want a status error", op, st, err)
			}
		}
	}
}

func TestCommandEvent(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ev, err := Command{Op: OpSetState, ID: "c1", State: "a.b"}.event(now)
	if err != nil || ev.ID != "c1" || ev.Kind != chart.KindSetState || string(ev.Data) != `{"state":"a.b"}` || !ev.CreatedAt.Equal(now) {
		t.Fatalf("set-state event %+v, %v", ev, err)
	}
	ev, err = Command{Op: OpReset, Context: json.RawMessage(`{"a":1}`)}.event(now)
	if err != nil || !strings.HasPrefix(ev.ID, "cmd-") || string(ev.Data) != `{"context":{"a":1}}` {
		t.Fatalf("reset event %+v, %v", ev, err)
	}
	for name, cmd := range map[string]Command{
		"unknown op":           {Op: "explode"},
		"no op":                {},
		"long id":              {Op: OpSuspend, ID: strings.Repeat("x", MaxCommandIDLen+1)},
		"nul in id":            {Op: OpSuspend, ID: "a\x00"},
		"set-state no state":   {Op: OpSetState},
		"state on suspend":     {Op: OpSuspend, State: "x"},
		"context on cancel":    {Op: OpCancel, Context: json.RawMessage(`{}`)},
		"reset context array":  {Op: OpReset, Context: json.RawMessage(`[]`)},
		"reset context broken": {Op: OpReset, Context: json.RawMessage(`{`)},
	} {
		if _, err := cmd.event(now); !errors.Is(err, stead.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// TestStatusCommandsCascade checks what suspend, resume and cancel commit: the status, the
// cancel's own event behind the backlog, and a control event of the same id to each unfinished
// child, whatever the machine.
func TestStatusCommandsCascade(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	exe := &stead.Execution{ID: "p", DefinitionID: "counter", Status: stead.StatusRunning, ActivePath: "split",
		Children: map[string]stead.ChildState{"p:b": {RootPath: "b"}, "p:a": {RootPath: "a"}, "p:done": {RootPath: "c", Finished: true}}}
	to := func(b stead.Bundle) []string {
		var out []string
		for _, e := range b.Emits {
			out = append(out, e.Target+" "+e.Event.Kind+" "+e.Event.ID)
		}
		return out
	}
	next, b, err := applyCommand(exe, stead.Event{ID: "c1", Kind: chart.KindSuspend}, counter{}, now)
	if err != nil || next.Status != stead.StatusSuspended || b.ProcessedEventID != "c1" ||
		!slices.Equal(to(b), []string{"p:a stead.suspend c1", "p:b stead.suspend c1"}) {
		t.Fatalf("suspend: %v, %s, %v", err, next.Status, to(b))
	}
	if exe.Status != stead.StatusRunning {
		t.Fatal("applyCommand changed its input")
	}
	next, b, err = applyCommand(next, stead.Event{ID: "c2", Kind: chart.KindCancelRequest}, counter{}, now)
	want := []string{"p stead.cancel cancel:c2", "p:a stead.cancel_request c2", "p:b stead.cancel_request c2"}
	if err != nil || next.Status != stead.StatusCancelling || !slices.Equal(to(b), want) {
		t.Fatalf("cancel: %v, %s, %v; want cancelling and %v", err, next.Status, to(b), want)
	}
	if cs := next.Children["p:a"]; !cs.Finished || cs.Outcome != chart.OutcomeCancelled {
		t.Fatalf("a child the cancel reached is %+v, want finished as cancelled", cs)
	}
	failed := &stead.Execution{ID: "f", DefinitionID: "counter", Status: stead.StatusFailed,
		DeadLetter: &stead.DeadLetter{Event: stead.Event{ID: "x", Kind: "k"}, Status: stead.StatusRunning}}
	next, b, err = applyCommand(failed, stead.Event{ID: "c3", Kind: chart.KindCancelRequest}, counter{}, now)
	if err != nil || next.Status != stead.StatusCancelled || !next.FinishedAt.Equal(now) || next.DeadLetter != nil || len(b.Emits) != 0 {
		t.Fatalf("cancel of a failed execution: %v, %+v, %v; want cancelled at once", err, next, to(b))
	}
	// A machine that is not a Controller takes the status commands only.
	for _, kind := range []string{chart.KindReset, chart.KindSetState, chart.KindRetry} {
		if _, _, err := applyCommand(failed, stead.Event{ID: "c4", Kind: kind}, counter{}, now); !errors.Is(err, stead.ErrInvalid) {
			t.Fatalf("%s with a plain machine: %v, want ErrInvalid", kind, err)
		}
	}
}

// TestCancelEndsWhateverTheMachine checks that the cancel's own event ends an operator's cancel
// with a machine that knows nothing of cancels, and that the backlog before it is dropped.
func TestCancelEndsWhateverTheMachine(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cfg := h.config()
	cfg.SuspendRecheck = 20 * time.Millisecond
	h.start(cfg)
	h.create("c")
	eventually(t, 10*time.Second, "started", func() bool { _, e := h.counts("c"); return e.Status == stead.StatusRunning })
	ctx := context.Background()
	if _, err := h.client.Suspend(ctx, "c", ""); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		h.send("c", "tick", fmt.Sprintf("t%d", i))
	}
	out, err := h.client.Cancel(ctx, "c", "stop")
	if err != nil || out.Status != stead.StatusCancelling {
		t.Fatalf("cancel: %+v, %v", out, err)
	}
	eventually(t, 10*time.Second, "cancelled", func() bool { _, e := h.counts("c"); return e.Status == stead.StatusCancelled })
	if c, e := h.counts("c"); c.N != 0 || e.FinishedAt.IsZero() {
		t.Fatalf("after the cancel: n=%d, finished %v; want the backlog dropped", c.N, e.FinishedAt)
	}
	if tr, err := h.store.ReadTrace(ctx, "c"); err != nil || len(tr) != 2 || tr[0].EventKind != chart.KindSuspend || tr[1].EventKind != chart.KindCancelRequest {
		t.Fatalf("trace %+v, %v: want the two commands recorded", tr, err)
	}
}

// TestControlMatching runs a batch command over a selection: running roots of a definition
// created before a time. It checks the dry run writes nothing, the batch applies to each match
// once, a second run with the same command id finds repeats, and refusals are reported.
func TestControlMatching(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(h.config())
	ctx := context.Background()
	var all []string
	for i := range 12 {
		id := fmt.Sprintf("b%02d", i)
		all = append(all, id)
		if i == 8 {
			h.clock.Advance(time.Hour) // b08 and later are created an hour later
		}
		h.create(id)
	}
	eventually(t, 10*time.Second, "every one started", func() bool {
		for _, id := range all {
			if _, e := h.counts(id); e.Status != stead.StatusRunning {
				return false
			}
		}
		return true
	})
	h.send("b03", "finish", "f3") // done: refused
	if _, err := h.client.Suspend(ctx, "b05", ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "b03 done", func() bool { _, e := h.counts("b03"); return e.Status == stead.StatusDone })
	_, b08 := h.counts("b08")
	sel := stead.ListFilter{DefinitionID: "counter", RootsOnly: true, Created: stead.TimeRange{Before: b08.CreatedAt}, Limit: 3}
	cmd := Command{Op: OpSuspend, ID: "night"}
	var pages int
	dry, err := h.client.ControlMatching(ctx, sel, cmd, BatchOptions{DryRun: true, Progress: func(BatchReport) { pages++ }})
	if err != nil || !dry.DryRun || dry.Matched != 8 || dry.Applied != 6 || len(dry.Refused) != 2 || pages != 3 {
		t.Fatalf("dry run: %+v, %v (%d pages)", dry, err, pages)
	}
	for _, id := range all {
		if _, e := h.counts(id); e.Status == stead.StatusSuspended && id != "b05" {
			t.Fatalf("the dry run suspended %s", id)
		}
	}
	rep, err := h.client.ControlMatching(ctx, sel, cmd, BatchOptions{Concurrency: 2})
	if err != nil || rep.Matched != 8 || rep.Applied != 6 || rep.Repeats != 0 || len(rep.Refused) != 2 {
		t.Fatalf("batch: %+v, %v", rep, err)
	}
	if rep.Refused[0].ExecutionID != "b03" || rep.Refused[1].ExecutionID != "b05" || !errors.As(rep.Refused[0].Err, new(*stead.StatusError)) {
		t.Fatalf("refused %+v, want b03 (done) and b05 (suspended already)", rep.Refused)
	}
	for _, id := range all {
		_, e := h.counts(id)
		want := id < "b08" && id != "b03"
		if (e.Status == stead.StatusSuspended) != want {
			t.Fatalf("%s is %s after the batch", id, e.Status)
		}
	}
	again, err := h.client.ControlMatching(ctx, sel, cmd, BatchOptions{})
	if err != nil || again.Repeats != 6 || again.Applied != 0 {
		t.Fatalf("the same batch again: %+v, %v; want six repeats", again, err)
	}
	resumed, err := h.client.ControlMatching(ctx, stead.ListFilter{Statuses: []stead.Status{stead.StatusSuspended}}, Command{Op: OpResume}, BatchOptions{})
	if err != nil || resumed.Applied != 7 || len(resumed.Refused) != 0 {
		t.Fatalf("resume every suspended one: %+v, %v", resumed, err)
	}
	for name, sel := range map[string]stead.ListFilter{
		"an empty selection":        {},
		"a selection with a cursor": {DefinitionID: "counter", Cursor: "abc"},
		"a bad window":              {Created: stead.TimeRange{From: b08.CreatedAt, Before: b08.CreatedAt}},
	} {
		if _, err := h.client.ControlMatching(ctx, sel, cmd, BatchOptions{}); !errors.Is(err, stead.ErrInvalid) {
			t.Fatalf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
