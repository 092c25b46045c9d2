package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgstore"
)

func newExe(id string) *stead.Execution {
	return &stead.Execution{ID: id, DefinitionID: "def", Status: stead.StatusRunning,
		Context: json.RawMessage(`{"n":1}`)}
}

// mustCommit commits exe and moves it to the version it was stored at, as a caller that goes on
// with the same value does. It returns the seqs of the emits.
func mustCommit(t *testing.T, s *stead.Store, exe *stead.Execution, b stead.Bundle) []int64 {
	t.Helper()
	c, err := s.Commit(context.Background(), exe, b)
	if err != nil {
		t.Fatalf("commit %s: %v", exe.ID, err)
	}
	exe.Version = c.Version
	return c.Seqs
}

func TestCommitCAS(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		bundle stead.Bundle
	}{
		{"state only", stead.Bundle{}},
		{"state only with dedupe", stead.Bundle{ProcessedEventID: "ev"}},
		{"with emit", stead.Bundle{Emits: []stead.Emit{{Target: "x", Event: stead.Event{ID: "e", Kind: "K"}}}}},
		{"with trace", stead.Bundle{Trace: &stead.TraceStep{EventKind: "K"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			ctx := context.Background()
			exe := newExe("a")
			mustCommit(t, s, exe, tt.bundle)
			if exe.Version != 1 {
				t.Fatalf("version after first commit = %d, want 1", exe.Version)
			}
			other, err := s.Load(ctx, "a")
			if err != nil || other.Version != 1 {
				t.Fatalf("load = %v, %v", other, err)
			}
			other.Status = stead.StatusSuspended
			mustCommit(t, s, other, tt.bundle)

			// exe is stale now: it must lose, keep its version, and write nothing.
			exe.Status = stead.StatusFailed
			_, err = s.Commit(ctx, exe, tt.bundle)
			var ce *stead.ConflictError
			if !errors.As(err, &ce) || !errors.Is(err, stead.ErrConflict) || ce.Expected != 1 || ce.Found != 2 {
				t.Fatalf("stale commit: err = %v, want conflict expected 1 found 2", err)
			}
			if exe.Version != 1 {
				t.Fatalf("stale commit changed version to %d", exe.Version)
			}
			got, _ := s.Load(ctx, "a")
			if got.Status != stead.StatusSuspended || got.Version != 2 {
				t.Fatalf("stored = %s v%d, want the winner's suspended v2", got.Status, got.Version)
			}

			// A second new execution with a taken id is a conflict too.
			if _, err := s.Commit(ctx, newExe("a"), tt.bundle); !errors.Is(err, stead.ErrConflict) {
				t.Fatalf("version 0 on existing row: err = %v, want conflict", err)
			}
			// A version > 0 for a missing row (a purged execution) never recreates it.
			ghost := newExe("ghost")
			ghost.Version = 3
			_, err = s.Commit(ctx, ghost, tt.bundle)
			if !errors.As(err, &ce) || ce.Found != -1 {
				t.Fatalf("commit of missing row: err = %v, want conflict with found -1", err)
			}
			if _, err := s.Load(ctx, "ghost"); !errors.Is(err, stead.ErrNotFound) {
				t.Fatalf("load ghost: %v, want not found", err)
			}
		})
	}
}

func TestCommitSideEffects(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	at := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.UTC)
	exe := newExe("src")
	seqs := mustCommit(t, s, exe, stead.Bundle{
		Emits: []stead.Emit{
			{Target: "t1", Event: stead.Event{ID: "e1", Kind: "First", Data: json.RawMessage(`{"a":1}`)}},
			{Event: stead.Event{ID: "e2", Kind: "Second"}},
			{Target: "t1", Event: stead.Event{ID: "e3", Kind: "Third"}},
		},
		ProcessedEventID: "in-1",
		Spawns:           []stead.Spawn{{ChildID: "src:r:0", RootPath: "r", Context: json.RawMessage(`{"k":"v"}`)}, {ChildID: "src:q:0", RootPath: "q"}},
		Timers: []stead.TimerOp{
			{Action: stead.TimerSchedule, Path: "a", FireAt: at},
			{Action: stead.TimerSchedule, Path: "b", FireAt: at},
			{Action: stead.TimerCancel, Path: "b"},
			{Action: stead.TimerSchedule, Path: "c", FireAt: at.Add(time.Hour)},
			{Action: stead.TimerSchedule, Path: "c", FireAt: at.Add(2 * time.Hour)},
		},
		Trace: &stead.TraceStep{EventID: "in-1", EventKind: "Go", From: "s1", To: "s2", Actions: []string{"x"}},
	})
	if len(seqs) != 3 || !slices.IsSorted(seqs) || seqs[0] == seqs[1] || seqs[1] == seqs[2] {
		t.Fatalf("seqs = %v, want 3 ascending", seqs)
	}
	pending, err := s.PendingOutbox(ctx, "src", 0)
	if err != nil || len(pending) != 3 {
		t.Fatalf("pending = %v, %v", pending, err)
	}
	for i, want := range []struct{ target, kind string }{{"t1", "First"}, {"", "Second"}, {"t1", "Third"}} {
		p := pending[i]
		if p.Seq != seqs[i] || p.Source != "src" || p.Target != want.target || p.Event.Kind != want.kind {
			t.Errorf("pending[%d] = %+v, want seq %d target %q kind %q", i, p, seqs[i], want.target, want.kind)
		}
	}
	if string(pending[0].Event.Data) != `{"a":1}` {
		t.Errorf("event data = %s", pending[0].Event.Data)
	}
	if ok, _ := s.IsProcessed(ctx, "src", "in-1"); !ok {
		t.Error("dedupe marker missing")
	}
	if ok, _ := s.IsProcessed(ctx, "src", "in-2"); ok {
		t.Error("unknown event reported processed")
	}
	timers, err := s.Timers(ctx, "src")
	if err != nil || len(timers) != 2 || timers[0].Path != "a" || timers[1].Path != "c" {
		t.Fatalf("timers = %+v, %v; want a and c", timers, err)
	}
	if !timers[0].FireAt.Equal(at.Truncate(time.Microsecond)) || !timers[1].FireAt.Equal(at.Add(2*time.Hour).Truncate(time.Microsecond)) {
		t.Errorf("fire times = %v, %v", timers[0].FireAt, timers[1].FireAt)
	}
	spawns, err := s.PendingSpawns(ctx, "src", 10)
	if err != nil || len(spawns) != 2 || spawns[0].ChildID != "src:r:0" || string(spawns[0].Context) != `{"k":"v"}` || spawns[1].Context != nil {
		t.Fatalf("spawns = %+v, %v", spawns, err)
	}
	trace, err := s.ReadTrace(ctx, "src")
	if err != nil || len(trace) != 1 || trace[0].Index != 0 || trace[0].To != "s2" {
		t.Fatalf("trace = %+v, %v", trace, err)
	}
	got, processed, err := s.LoadForEvent(ctx, "src", "in-1")
	if err != nil || !processed || got.Version != 1 || string(got.Context) != `{"n":1}` {
		t.Fatalf("load for event = %+v, %v, %v", got, processed, err)
	}
	// Re-arming replaces; a stale DeleteTimer leaves the re-armed timer alone.
	old := timers[0]
	mustCommit(t, s, exe, stead.Bundle{Timers: []stead.TimerOp{{Action: stead.TimerSchedule, Path: "a", FireAt: at.Add(time.Minute)}}})
	if ok, err := s.DeleteTimer(ctx, old); ok || err != nil {
		t.Fatalf("stale delete = %v, %v; want false", ok, err)
	}
	due, err := s.DueTimers(ctx, at.Add(time.Minute), 10)
	if err != nil || len(due) != 1 || due[0].Path != "a" {
		t.Fatalf("due = %+v, %v", due, err)
	}
	if ok, err := s.DeleteTimer(ctx, due[0]); !ok || err != nil {
		t.Fatalf("delete = %v, %v; want true", ok, err)
	}
}

func TestTraceRing(t *testing.T) {
	t.Parallel()
	s := newStore(t, pgstore.WithTraceCap(2))
	ctx := context.Background()
	exe := newExe("t")
	for i := range 4 {
		mustCommit(t, s, exe, stead.Bundle{Trace: &stead.TraceStep{EventKind: fmt.Sprint("k", i)}})
	}
	idx, err := s.AppendTrace(ctx, "t", stead.TraceStep{EventKind: "k4"})
	if err != nil || idx != 4 {
		t.Fatalf("append = %d, %v; want 4", idx, err)
	}
	trace, err := s.ReadTrace(ctx, "t")
	if err != nil || len(trace) != 2 || trace[0].Index != 3 || trace[1].Index != 4 || trace[1].EventKind != "k4" {
		t.Fatalf("trace = %+v, %v; want indices 3, 4", trace, err)
	}
	if _, err := s.AppendTrace(ctx, "missing", stead.TraceStep{}); !errors.Is(err, stead.ErrNotFound) {
		t.Fatalf("append to missing execution: %v", err)
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	finished := time.Date(2023, 11, 14, 22, 13, 20, 500000000, time.UTC)
	rows := []struct {
		id, def string
		status  stead.Status
		parent  string
	}{
		{"e00", "d1", stead.StatusRunning, ""}, {"e01", "d1", stead.StatusRunning, ""},
		{"e02", "d1", stead.StatusDone, ""}, {"e03", "d1", stead.StatusDone, ""},
		{"e04", "d1", stead.StatusSuspended, ""}, {"e05", "d2", stead.StatusRunning, ""},
		{"e06", "d2", stead.StatusRunning, ""}, {"e07", "d2", stead.StatusDone, ""},
		{"e08", "d2", stead.StatusSuspended, ""}, {"e09", "d2", stead.StatusFailed, ""},
		{"e10", "d2", stead.StatusRunning, "e05"}, {"e11", "d2", stead.StatusRunning, "e05"},
	}
	var items []stead.CommitItem
	for _, e := range rows {
		exe := &stead.Execution{ID: e.id, DefinitionID: e.def, Status: e.status, ParentID: e.parent, ActivePath: "a.b"}
		if e.status == stead.StatusDone {
			exe.FinishedAt = finished
			exe.Outcome = "ok"
		}
		items = append(items, stead.CommitItem{Execution: exe})
	}
	res, err := s.CommitBatch(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("item %d: %v", i, r.Err)
		}
	}
	tests := []struct {
		name string
		f    stead.ListFilter
		want []string
	}{
		{"all", stead.ListFilter{}, []string{"e00", "e01", "e02", "e03", "e04", "e05", "e06", "e07", "e08", "e09", "e10", "e11"}},
		{"definition", stead.ListFilter{DefinitionID: "d1"}, []string{"e00", "e01", "e02", "e03", "e04"}},
		{"one status", stead.ListFilter{DefinitionID: "d2", Statuses: []stead.Status{stead.StatusRunning}}, []string{"e05", "e06", "e10", "e11"}},
		{"two statuses", stead.ListFilter{DefinitionID: "d2", Statuses: []stead.Status{stead.StatusDone, stead.StatusFailed}}, []string{"e07", "e09"}},
		{"roots", stead.ListFilter{DefinitionID: "d2", RootsOnly: true}, []string{"e05", "e06", "e07", "e08", "e09"}},
		{"roots running", stead.ListFilter{DefinitionID: "d2", RootsOnly: true, Statuses: []stead.Status{stead.StatusRunning}}, []string{"e05", "e06"}},
		{"none", stead.ListFilter{DefinitionID: "d3"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, limit := range []int{1, 4, 100} {
				f := tt.f
				f.Limit = limit
				var got []string
				for pages := 0; ; pages++ {
					if pages > 100 {
						t.Fatal("cursor does not advance")
					}
					p, err := s.List(ctx, f)
					if err != nil {
						t.Fatal(err)
					}
					if len(p.Items) > limit {
						t.Fatalf("page of %d items, limit %d", len(p.Items), limit)
					}
					for _, it := range p.Items {
						got = append(got, it.ID)
					}
					if p.NextCursor == "" {
						break
					}
					f.Cursor = p.NextCursor
				}
				if !slices.Equal(got, tt.want) {
					t.Fatalf("limit %d: got %v, want %v", limit, got, tt.want)
				}
			}
		})
	}
	p, err := s.List(ctx, stead.ListFilter{DefinitionID: "d1", Statuses: []stead.Status{stead.StatusDone}, Limit: 1})
	if err != nil || len(p.Items) != 1 {
		t.Fatal(p, err)
	}
	sm := p.Items[0]
	if sm.ID != "e02" || sm.Outcome != "ok" || sm.ActivePath != "a.b" || sm.Version != 1 || !sm.FinishedAt.Equal(finished) || sm.ParentID != "" {
		t.Fatalf("summary = %+v", sm)
	}
	if _, err := s.List(ctx, stead.ListFilter{DefinitionID: "d2", Cursor: p.NextCursor}); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("cursor of another filter: %v, want invalid", err)
	}
}

func TestPurge(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	full := func(id string) stead.Bundle {
		return stead.Bundle{
			Emits:            []stead.Emit{{Target: id, Event: stead.Event{ID: id + "-tick", Kind: "Tick"}}},
			ProcessedEventID: id + "-ev",
			Timers:           []stead.TimerOp{{Action: stead.TimerSchedule, Path: "P", FireAt: time.Unix(1, 0)}},
			Spawns:           []stead.Spawn{{ChildID: id + "-child"}},
			Trace:            &stead.TraceStep{EventKind: "Tick"},
		}
	}
	victim, bystander := newExe("victim"), newExe("bystander")
	mustCommit(t, s, victim, full("victim"))
	mustCommit(t, s, bystander, full("bystander"))

	if ok, err := s.Purge(ctx, "victim", 8); ok || err != nil {
		t.Fatalf("purge at wrong version = %v, %v", ok, err)
	}
	if ok, _ := s.IsProcessed(ctx, "victim", "victim-ev"); !ok {
		t.Fatal("a refused purge removed the marker")
	}
	if ok, err := s.Purge(ctx, "victim", 1); !ok || err != nil {
		t.Fatalf("purge = %v, %v", ok, err)
	}
	if _, err := s.Load(ctx, "victim"); !errors.Is(err, stead.ErrNotFound) {
		t.Fatalf("load after purge: %v", err)
	}
	if ok, _ := s.IsProcessed(ctx, "victim", "victim-ev"); ok {
		t.Fatal("marker survived purge")
	}
	if tr, _ := s.ReadTrace(ctx, "victim"); len(tr) != 0 {
		t.Fatalf("trace survived purge: %v", tr)
	}
	due, _ := s.DueTimers(ctx, time.Unix(10, 0), 100)
	out, _ := s.PendingOutbox(ctx, "", 100)
	sp, _ := s.PendingSpawns(ctx, "", 100)
	if len(due) != 1 || due[0].ExecutionID != "bystander" || len(out) != 1 || out[0].Target != "bystander" || len(sp) != 1 || sp[0].ParentID != "bystander" {
		t.Fatalf("after purge: timers %v, outbox %v, spawns %v; want only the bystander's", due, out, sp)
	}
	if ok, err := s.Purge(ctx, "victim", 1); ok || err != nil {
		t.Fatalf("second purge = %v, %v", ok, err)
	}
	if _, err := s.Commit(ctx, victim, stead.Bundle{}); !errors.Is(err, stead.ErrConflict) {
		t.Fatalf("stale commit of purged execution: %v, want conflict", err)
	}
	reborn := newExe("victim")
	mustCommit(t, s, reborn, stead.Bundle{})
	if reborn.Version != 1 {
		t.Fatalf("reborn version %d", reborn.Version)
	}
}

func TestClaims(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	exe := newExe("src")
	var emits []stead.Emit
	var spawns []stead.Spawn
	for i := range 5 {
		emits = append(emits, stead.Emit{Target: "t", Event: stead.Event{ID: fmt.Sprint("e", i), Kind: "K"}})
		spawns = append(spawns, stead.Spawn{ChildID: fmt.Sprint("c", i)})
	}
	seqs := mustCommit(t, s, exe, stead.Bundle{Emits: emits, Spawns: spawns})
	now := time.Now()
	first, err := s.ClaimOutbox(ctx, now, time.Minute, 3)
	if err != nil || len(first) != 3 || first[0].Seq != seqs[0] || first[2].Seq != seqs[2] {
		t.Fatalf("claim = %+v, %v", first, err)
	}
	second, err := s.ClaimOutbox(ctx, now, time.Minute, 10)
	if err != nil || len(second) != 2 || second[0].Seq != seqs[3] {
		t.Fatalf("second claim = %+v, %v", second, err)
	}
	if none, _ := s.ClaimOutbox(ctx, now.Add(59*time.Second), time.Minute, 10); len(none) != 0 {
		t.Fatalf("claim under live leases returned %v", none)
	}
	if err := s.AckOutbox(ctx, []int64{seqs[0], seqs[1], 999999}); err != nil {
		t.Fatal(err)
	}
	again, err := s.ClaimOutbox(ctx, now.Add(time.Minute), time.Minute, 10)
	if err != nil || len(again) != 3 || again[0].Seq != seqs[2] {
		t.Fatalf("claim after expiry = %+v, %v; want seqs 3..5", again, err)
	}
	sp, err := s.ClaimSpawns(ctx, now, time.Minute, 2)
	if err != nil || len(sp) != 2 || sp[0].ChildID != "c0" {
		t.Fatalf("claim spawns = %+v, %v", sp, err)
	}
	if err := s.AckSpawns(ctx, []int64{sp[0].Seq}); err != nil {
		t.Fatal(err)
	}
	left, _ := s.PendingSpawns(ctx, "", 0)
	if len(left) != 4 {
		t.Fatalf("pending spawns after ack = %d, want 4", len(left))
	}
}

func TestCommitBatch(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	existing := newExe("b")
	mustCommit(t, s, existing, stead.Bundle{})
	stale := existing.Clone()
	mustCommit(t, s, existing, stead.Bundle{})

	a, c, dup := newExe("a"), newExe("c"), newExe("a")
	bad := newExe("bad")
	items := []stead.CommitItem{
		{Execution: c, Bundle: stead.Bundle{Emits: []stead.Emit{{Target: "x", Event: stead.Event{ID: "1", Kind: "K"}}, {Event: stead.Event{ID: "2", Kind: "K"}}}}},
		{Execution: a, Bundle: stead.Bundle{ProcessedEventID: "ev-a", Emits: []stead.Emit{{Event: stead.Event{ID: "3", Kind: "K"}}}, Trace: &stead.TraceStep{}}},
		{Execution: stale, Bundle: stead.Bundle{Emits: []stead.Emit{{Event: stead.Event{ID: "4", Kind: "K"}}}, ProcessedEventID: "ev-b"}},
		{Execution: dup},
		{Execution: bad, Bundle: stead.Bundle{Emits: []stead.Emit{{Event: stead.Event{Kind: "no id"}}}}},
		{Execution: nil},
		{Execution: newExe("bad")}, // a repeat of an invalid first item is still a repeat
	}
	res, err := s.CommitBatch(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil || len(res[0].Seqs) != 2 || res[0].Version != 1 || res[1].Err != nil || len(res[1].Seqs) != 1 || res[1].Version != 1 {
		t.Fatalf("winners: %+v", res[:2])
	}
	var ce *stead.ConflictError
	if !errors.As(res[2].Err, &ce) || ce.Found != 2 || stale.Version != 1 {
		t.Fatalf("stale item: %v (version %d)", res[2].Err, stale.Version)
	}
	for i := 3; i < 7; i++ {
		if !errors.Is(res[i].Err, stead.ErrInvalid) {
			t.Fatalf("item %d: %v, want invalid", i, res[i].Err)
		}
	}
	if a.Version != 0 || c.Version != 0 || dup.Version != 0 {
		t.Fatalf("the batch changed its items: versions a=%d c=%d dup=%d", a.Version, c.Version, dup.Version)
	}
	if _, err := s.Load(ctx, "bad"); !errors.Is(err, stead.ErrNotFound) {
		t.Fatalf("the repeat of an invalid item landed: %v", err)
	}
	if ok, _ := s.IsProcessed(ctx, "b", "ev-b"); ok {
		t.Fatal("the loser's marker landed")
	}
	if out, _ := s.PendingOutbox(ctx, "b", 0); len(out) != 0 {
		t.Fatalf("the loser's emits landed: %v", out)
	}
	loaded, err := s.LoadForEvents(ctx, []stead.EventRef{{ExecutionID: "a", EventID: "ev-a"}, {ExecutionID: "nope", EventID: "x"}, {ExecutionID: "c", EventID: "ev-a"}, {ExecutionID: "a", EventID: "other"}})
	if err != nil {
		t.Fatal(err)
	}
	if loaded[0].Execution == nil || !loaded[0].Processed || loaded[1].Execution != nil || loaded[1].Processed ||
		loaded[2].Execution.ID != "c" || loaded[2].Processed || loaded[3].Execution.ID != "a" || loaded[3].Processed {
		t.Fatalf("load for events = %+v", loaded)
	}
	if _, err := s.CommitBatch(ctx, make([]stead.CommitItem, stead.MaxBatch+1)); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("oversized batch: %v", err)
	}
}

func TestInvalidInput(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	now := time.Now()
	tests := []struct {
		name string
		call func() error
	}{
		{"empty id", func() error { _, err := s.Commit(ctx, newExe(""), stead.Bundle{}); return err }},
		{"nul id", func() error { _, err := s.Commit(ctx, newExe("a\x00b"), stead.Bundle{}); return err }},
		{"bad utf8", func() error { _, err := s.Commit(ctx, newExe("a\xffb"), stead.Bundle{}); return err }},
		{"bad context", func() error {
			e := newExe("a")
			e.Context = json.RawMessage(`[1`)
			_, err := s.Commit(ctx, e, stead.Bundle{})
			return err
		}},
		{"nul escape", func() error {
			e := newExe("a")
			e.Context = json.RawMessage(`{"a":"\u0000"}`)
			_, err := s.Commit(ctx, e, stead.Bundle{Trace: &stead.TraceStep{}})
			return err
		}},
		{"negative version", func() error { e := newExe("a"); e.Version = -1; _, err := s.Commit(ctx, e, stead.Bundle{}); return err }},
		{"timer without time", func() error {
			_, err := s.Commit(ctx, newExe("a"), stead.Bundle{Timers: []stead.TimerOp{{Action: stead.TimerSchedule, Path: "p"}}})
			return err
		}},
		{"nil execution", func() error { _, err := s.Commit(ctx, nil, stead.Bundle{}); return err }},
		{"load empty", func() error { _, err := s.Load(ctx, ""); return err }},
		{"load for event nul", func() error { _, _, err := s.LoadForEvent(ctx, "a", "\x00"); return err }},
		{"negative limit", func() error { _, err := s.List(ctx, stead.ListFilter{Limit: -1}); return err }},
		{"huge limit", func() error { _, err := s.ClaimOutbox(ctx, now, time.Second, stead.MaxListLimit+1); return err }},
		{"forged cursor", func() error { _, err := s.List(ctx, stead.ListFilter{Cursor: "bm90IGEgY3Vyc29y"}); return err }},
		{"bad status", func() error { _, err := s.List(ctx, stead.ListFilter{Statuses: []stead.Status{"nope"}}); return err }},
		{"negative lease", func() error { _, err := s.ClaimSpawns(ctx, now, -time.Second, 1); return err }},
		{"purge negative", func() error { _, err := s.Purge(ctx, "a", -1); return err }},
		{"timer path", func() error { _, err := s.DeleteTimer(ctx, stead.Timer{ExecutionID: "a"}); return err }},
		{"oversized ack", func() error { return s.AckOutbox(ctx, make([]int64, stead.MaxBatch+1)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, stead.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
	if _, err := s.Load(ctx, "a"); !errors.Is(err, stead.ErrNotFound) {
		t.Fatalf("an invalid commit wrote something: %v", err)
	}
}
