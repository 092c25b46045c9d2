package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/steadhq/stead"
)

var commitRules = []rule{
	{name: "first_commit_inserts", run: testFirstCommitInserts},
	{name: "limit_sized_input_lands", run: testLimitSizedInput},
	{name: "state_only_commit_returns_no_seqs", run: testStateOnlyCommit},
	{name: "cas_bumps_version", run: testCASBumps},
	{name: "stale_commit_conflicts", run: testStaleCommitConflicts},
	{name: "new_execution_over_existing_conflicts", run: testNewOverExisting},
	{name: "missing_execution_above_version_zero_conflicts", run: testMissingAboveZero},
	{name: "racing_commits_exactly_one_wins", run: testRacingCommits},
	{name: "invalid_item_writes_nothing", run: testInvalidItemWritesNothing},
	{name: "no_aliasing", run: testNoAliasing},
	{name: "never_changes_its_arguments", run: testNeverChangesArguments},
}

func testFirstCommitInserts(h *harness) {
	exe := h.newExe("e")
	// Every field set, so that the round trip covers all of them.
	exe.Status = stead.StatusFailed
	exe.Outcome = "rejected"
	exe.Error = "ValueError: négative total\n(while recovering from KeyError)"
	exe.ParentID, exe.ChildID, exe.RootPath = h.id("parent"), "region-b", "main/par/b"
	exe.FinishedAt = base.Add(3*time.Second + 999*time.Nanosecond)
	seqs := h.commit(exe, stead.Bundle{})
	if len(seqs) != 0 {
		h.Fatalf("state-only first commit returned seqs %v", seqs)
	}
	if exe.Version != 1 {
		h.Fatalf("after the first commit Version = %d, want 1", exe.Version)
	}
	got := h.load(exe.ID)
	h.sameExe("loaded after first commit", got, exe)
}

func testStateOnlyCommit(h *harness) {
	exe := h.newExe("e")
	c, err := h.s.Commit(h.ctx, exe, stead.Bundle{ProcessedEventID: "ev-1"})
	if err != nil || c.Seqs != nil || c.Version != 1 {
		h.Fatalf("state-only Commit = %+v, %v; want version 1, no seqs, nil", c, err)
	}
	exe.Version = c.Version
	if !h.processed(exe.ID, "ev-1") {
		h.Fatal("state-only commit did not record its processed event id")
	}
	v, err := h.s.Save(h.ctx, exe)
	if err != nil {
		h.Fatalf("Save: %v", err)
	}
	exe.Version = v
	if exe.Version != 2 || h.load(exe.ID).Version != 2 {
		h.Fatalf("after Commit and Save: Version %d, want 2", exe.Version)
	}
	if n := len(h.outbox("")) + len(h.spawns("")) + len(h.timers(exe.ID)) + len(h.trace(exe.ID)); n != 0 {
		h.Fatalf("state-only commits left %d side-effect rows", n)
	}
}

func testCASBumps(h *harness) {
	exe := h.newExe("e")
	for i := 1; i <= 3; i++ {
		exe.ActivePath = fmt.Sprintf("main/step-%d", i)
		h.commit(exe, stead.Bundle{})
		if exe.Version != int64(i) {
			h.Fatalf("commit %d: Version = %d, want %d", i, exe.Version, i)
		}
	}
	got := h.load(exe.ID)
	if got.Version != 3 || got.ActivePath != "main/step-3" {
		h.Fatalf("loaded Version %d ActivePath %q, want 3 and main/step-3", got.Version, got.ActivePath)
	}
	h.sameExe("after three commits", got, exe)
	// A copy loaded from the store commits on from there.
	got.Outcome = "from-loaded-copy"
	h.commit(got, stead.Bundle{})
	if got.Version != 4 || h.load(exe.ID).Outcome != "from-loaded-copy" {
		h.Fatalf("commit of a loaded copy: Version %d, want 4", got.Version)
	}
}

func testStaleCommitConflicts(h *harness) {
	loser := h.newExe("e")
	h.commit(loser, stead.Bundle{})
	winner := h.load(loser.ID)
	winner.Outcome = "winner"
	h.commit(winner, stead.Bundle{})

	ids := []string{loser.ID}
	refs := []stead.EventRef{{ExecutionID: loser.ID, EventID: "stale-processed"}}
	before := h.snap(ids, refs...)
	loser.Outcome = "loser"
	_, err := h.s.Commit(h.ctx, loser, h.fullBundle(loser.ID, "stale"))
	h.wantConflict("stale Commit", err, loser.ID, 1, 2, -1)
	if loser.Version != 1 {
		h.Fatalf("the loser's Version is %d after a lost CAS, want 1 (untouched)", loser.Version)
	}
	h.unchanged("a lost CAS", before, ids, refs...)
	if got := h.load(loser.ID); got.Outcome != "winner" || got.Version != 2 {
		h.Fatalf("stored Outcome %q Version %d, want the winner's (winner, 2)", got.Outcome, got.Version)
	}
	// State-only commits lose the same way (PostgreSQL takes a different path for them).
	_, err = h.s.Commit(h.ctx, loser, stead.Bundle{ProcessedEventID: "stale-processed"})
	h.wantConflict("stale state-only Commit", err, loser.ID, 1, 2, -1)
	h.unchanged("a lost state-only CAS", before, ids, refs...)
	if loser.Version != 1 {
		h.Fatalf("Version %d after a lost state-only CAS, want 1", loser.Version)
	}
}

func testNewOverExisting(h *harness) {
	first := h.newExe("e")
	h.commit(first, stead.Bundle{})
	second := h.newExe("e")
	second.Outcome = "impostor"
	before := h.snap([]string{first.ID})
	for _, b := range []stead.Bundle{{}, h.fullBundle(first.ID, "dup")} {
		_, err := h.s.Commit(h.ctx, second, b)
		h.wantConflict("Commit of a new execution over a stored one", err, first.ID, 0, 1, -1)
		if second.Version != 0 {
			h.Fatalf("Version %d after the lost CAS, want 0", second.Version)
		}
	}
	h.unchanged("a version-0 commit over a stored execution", before, []string{first.ID})
}

func testMissingAboveZero(h *harness) {
	exe := h.newExe("never-stored")
	exe.Version = 3
	before := h.snap([]string{exe.ID})
	for _, b := range []stead.Bundle{{}, h.fullBundle(exe.ID, "ghost")} {
		_, err := h.s.Commit(h.ctx, exe, b)
		h.wantConflict("Commit at version 3 of a missing execution", err, exe.ID, 3, -1)
		if exe.Version != 3 {
			h.Fatalf("Version %d after the lost CAS, want 3", exe.Version)
		}
	}
	h.unchanged("a commit above version 0 of a missing execution", before, []string{exe.ID})
}

// testRacingCommits starts many goroutines committing the same version, round after round; the
// first round races the insert itself.
func testRacingCommits(h *harness) {
	const racers, rounds = 16, 4
	id := h.id("e")
	var winners []string
	for round := range rounds {
		var cur *stead.Execution
		if round == 0 {
			cur = h.newExe("e")
		} else {
			cur = h.load(id)
		}
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			won      []string
			failures []error
		)
		for g := range racers {
			mine := cur.Clone()
			mine.Outcome = fmt.Sprintf("round-%d-racer-%d", round, g)
			b := stead.Bundle{
				Emits:            []stead.Emit{{Target: id, Event: stead.Event{ID: mine.Outcome, Kind: "Won"}}},
				ProcessedEventID: mine.Outcome,
			}
			wg.Go(func() {
				c, err := h.s.Commit(h.ctx, mine, b)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					if c.Version != cur.Version+1 || mine.Version != cur.Version {
						failures = append(failures, fmt.Errorf("winner committed version %d from %d, want %d from an untouched %d",
							c.Version, mine.Version, cur.Version+1, cur.Version))
					}
					won = append(won, mine.Outcome)
				case errors.Is(err, stead.ErrConflict):
					if mine.Version != cur.Version {
						failures = append(failures, fmt.Errorf("loser Version %d, want %d", mine.Version, cur.Version))
					}
				default:
					failures = append(failures, err)
				}
			})
		}
		wg.Wait()
		if len(failures) > 0 {
			h.Fatalf("round %d: %v", round, errors.Join(failures...))
		}
		if len(won) != 1 {
			h.Fatalf("round %d: %d of %d racers won the same version, want exactly 1: %v", round, len(won), racers, won)
		}
		winners = append(winners, won[0])
		got := h.load(id)
		if got.Version != cur.Version+1 || got.Outcome != won[0] {
			h.Fatalf("round %d: stored Version %d Outcome %q, want %d %q", round, got.Version, got.Outcome, cur.Version+1, won[0])
		}
	}
	var emitted []string
	for _, e := range h.outbox(id) {
		emitted = append(emitted, e.Event.ID)
	}
	if fmt.Sprint(emitted) != fmt.Sprint(winners) {
		h.Fatalf("outbox holds %v, want exactly the winners' emits %v", emitted, winners)
	}
	for _, w := range winners {
		if !h.processed(id, w) {
			h.Fatalf("winner %s's processed marker is missing", w)
		}
	}
}

// invalidItems are bundles and executions with exactly one bad item each; the rest is valid.
var invalidItems = []struct {
	name   string
	mutate func(e *stead.Execution, b *stead.Bundle)
}{
	{"emit_without_event_id", func(e *stead.Execution, b *stead.Bundle) { b.Emits[1].Event.ID = "" }},
	{"emit_without_kind", func(e *stead.Execution, b *stead.Bundle) { b.Emits[0].Event.Kind = "" }},
	{"emit_data_not_json", func(e *stead.Execution, b *stead.Bundle) { b.Emits[0].Event.Data = json.RawMessage(`{"n":`) }},
	{"emit_data_oversized", func(e *stead.Execution, b *stead.Bundle) { b.Emits[0].Event.Data = bigJSON(stead.MaxPayload + 1) }},
	{"emit_target_nul", func(e *stead.Execution, b *stead.Bundle) { b.Emits[1].Target = "x\x00y" }},
	{"emit_event_id_invalid_utf8", func(e *stead.Execution, b *stead.Bundle) { b.Emits[1].Event.ID = "bad\xff" }},
	{"spawn_without_child_id", func(e *stead.Execution, b *stead.Bundle) { b.Spawns[0].ChildID = "" }},
	{"spawn_context_not_object", func(e *stead.Execution, b *stead.Bundle) { b.Spawns[0].Context = json.RawMessage(`[1,2]`) }},
	{"timer_unknown_action", func(e *stead.Execution, b *stead.Bundle) { b.Timers[0].Action = "snooze" }},
	{"timer_schedule_without_fire_time", func(e *stead.Execution, b *stead.Bundle) {
		b.Timers = append(b.Timers, stead.TimerOp{Action: stead.TimerSchedule, Path: "late"})
	}},
	{"timer_empty_path", func(e *stead.Execution, b *stead.Bundle) { b.Timers[0].Path = "" }},
	{"trace_context_not_json", func(e *stead.Execution, b *stead.Bundle) { b.Trace.Context = json.RawMessage(`nope`) }},
	{"trace_kind_invalid_utf8", func(e *stead.Execution, b *stead.Bundle) { b.Trace.EventKind = "\xc3\x28" }},
	{"trace_context_nul_escape", func(e *stead.Execution, b *stead.Bundle) { b.Trace.Context = json.RawMessage(`{"a":"\u0000"}`) }},
	{"processed_idnul", func(e *stead.Execution, b *stead.Bundle) { b.ProcessedEventID = "ev\x00" }},
	{"processed_id_invalid_utf8", func(e *stead.Execution, b *stead.Bundle) { b.ProcessedEventID = "ev\xfe" }},
	{"execution_unknown_status", func(e *stead.Execution, b *stead.Bundle) { e.Status = "zombie" }},
	{"execution_empty_definition", func(e *stead.Execution, b *stead.Bundle) { e.DefinitionID = "" }},
	{"execution_context_not_object", func(e *stead.Execution, b *stead.Bundle) { e.Context = json.RawMessage(`"text"`) }},
	{"execution_context_oversized", func(e *stead.Execution, b *stead.Bundle) { e.Context = bigObject(stead.MaxPayload + 1) }},
	{"execution_priority_out_of_range", func(e *stead.Execution, b *stead.Bundle) { e.Priority = stead.MaxPriority + 1 }},
	{"execution_active_path_nul", func(e *stead.Execution, b *stead.Bundle) { e.ActivePath = "a\x00" }},
	{"execution_record_oversized", func(e *stead.Execution, b *stead.Bundle) {
		// Each result fits MaxPayload; together they exceed MaxRecord.
		for i := range stead.MaxRecord/stead.MaxPayload + 1 {
			e.Children[fmt.Sprintf("big-%d", i)] = stead.ChildState{RootPath: "p", Result: bigJSON(stead.MaxPayload - 16)}
		}
	}},
	{"execution_deferred_event_without_id", func(e *stead.Execution, b *stead.Bundle) { e.Deferred[0].ID = "" }},
}

// testInvalidItemWritesNothing commits full bundles with one invalid item, to a new execution and
// to a stored one, and checks that nothing at all changed.
func testInvalidItemWritesNothing(h *harness) {
	stored := h.newExe("stored")
	h.commit(stored, h.fullBundle(stored.ID, "first"))
	for _, c := range invalidItems {
		for _, target := range []string{"new", "stored"} {
			var exe *stead.Execution
			if target == "new" {
				exe = h.newExe("new-" + c.name)
			} else {
				exe = h.load(stored.ID)
			}
			b := h.fullBundle(exe.ID, "bad-"+c.name)
			c.mutate(exe, &b)
			ids := []string{exe.ID, stored.ID}
			refs := []stead.EventRef{{ExecutionID: exe.ID, EventID: "bad-" + c.name + "-processed"}}
			before := h.snap(ids, refs...)
			version := exe.Version
			_, err := h.s.Commit(h.ctx, exe, b)
			what := fmt.Sprintf("%s (%s execution)", c.name, target)
			h.wantErr(what, err, stead.ErrInvalid)
			if exe.Version != version {
				h.Fatalf("%s: Version %d after a refused commit, want %d", what, exe.Version, version)
			}
			h.unchanged(what, before, ids, refs...)
		}
	}
}

// testNoAliasing checks that neither the committed value, the bundle, nor a loaded copy shares
// memory with what the store keeps.
func testNoAliasing(h *harness) {
	exe := h.newExe("e")
	b := h.fullBundle(exe.ID, "alias")
	h.commit(exe, b)
	want := normExe(exe)
	wantOutbox := mapSlice(h.outbox(exe.ID), normOutbox)

	exe.History["main"] = "mutated"
	exe.Context[2] = 'X'
	exe.Deferred[0].Data[2] = 'X'
	exe.InvokeSeq["main/par"] = 99
	b.Emits[0].Event.Data[2] = 'X'
	b.Spawns[0].Context[2] = 'X'
	b.Trace.Actions[0] = "mutated"

	loaded := h.load(exe.ID)
	loaded.History["main"] = "mutated-too"
	loaded.Children["region-a"] = stead.ChildState{RootPath: "gone"}
	if len(loaded.Context) > 2 {
		loaded.Context[2] = 'Y'
	}
	entries := h.outbox(exe.ID)
	if len(entries) > 0 && len(entries[0].Event.Data) > 2 {
		entries[0].Event.Data[2] = 'Y'
	}

	h.sameExe("reloaded after mutating every copy", h.load(exe.ID), want)
	if got := mapSlice(h.outbox(exe.ID), normOutbox); fmt.Sprint(got) != fmt.Sprint(wantOutbox) {
		h.Fatalf("outbox changed by mutating copies: %s, want %s", dump(got), dump(wantOutbox))
	}
	sp := h.spawns(exe.ID)
	if len(sp) != 1 || string(canonJSON(sp[0].Context)) != `{"seed":true}` {
		h.Fatalf("spawn changed by mutating the bundle: %s", dump(sp))
	}
	tr := h.trace(exe.ID)
	if len(tr) != 1 || len(tr[0].Actions) != 1 || tr[0].Actions[0] != "log" {
		h.Fatalf("trace changed by mutating the bundle: %s", dump(tr))
	}
}

// testLimitSizedInput commits ids, payloads and text exactly at the documented limits: a backend
// may not refuse what the contract allows.
func testLimitSizedInput(h *harness) {
	long := h.id(strings.Repeat("i", stead.MaxIDLen-len(h.id(""))))
	exe := h.newExe("x")
	exe.ID = long
	exe.DefinitionID = strings.Repeat("d", stead.MaxIDLen)
	exe.ActivePath = strings.Repeat("p", stead.MaxIDLen)
	exe.Context = bigObject(stead.MaxPayload)
	b := stead.Bundle{
		Emits:            []stead.Emit{{Target: long, Event: stead.Event{ID: strings.Repeat("e", stead.MaxIDLen), Kind: strings.Repeat("k", stead.MaxIDLen), Data: bigJSON(stead.MaxPayload)}}},
		ProcessedEventID: strings.Repeat("e", stead.MaxIDLen),
		Spawns:           []stead.Spawn{{ChildID: strings.Repeat("c", stead.MaxIDLen), RootPath: strings.Repeat("r", stead.MaxIDLen), Context: bigObject(stead.MaxPayload)}},
		Timers:           []stead.TimerOp{schedule(strings.Repeat("t", stead.MaxIDLen), base)},
		Trace:            &stead.TraceStep{EventKind: strings.Repeat("k", stead.MaxIDLen), Context: bigObject(stead.MaxPayload)},
	}
	h.commit(exe, b)
	h.sameExe("limit-sized execution", h.load(long), exe)
	if !h.processed(long, strings.Repeat("e", stead.MaxIDLen)) {
		h.Fatal("limit-sized processed id not recorded")
	}
	ob := h.outbox(long)
	if len(ob) != 1 || len(canonJSON(ob[0].Event.Data)) != stead.MaxPayload {
		h.Fatalf("limit-sized emit: %d entries", len(ob))
	}
	sp := h.spawns(long)
	if len(sp) != 1 || len(canonJSON(sp[0].Context)) != stead.MaxPayload {
		h.Fatalf("limit-sized spawn: %d entries", len(sp))
	}
	if tr := h.trace(long); len(tr) != 1 || len(canonJSON(tr[0].Context)) != stead.MaxPayload {
		h.Fatalf("limit-sized trace: %d steps", len(tr))
	}
	if tm := h.timers(long); len(tm) != 1 || len(tm[0].Path) != stead.MaxIDLen {
		h.Fatalf("limit-sized timer: %s", dump(tm))
	}
	if ok, err := h.s.Purge(h.ctx, long, exe.Version); err != nil || !ok {
		h.Fatalf("Purge of the limit-sized execution = %v, %v", ok, err)
	}
}

// testNeverChangesArguments commits, loses a compare-and-swap and is refused, each with a full
// bundle, and checks that neither the execution nor the bundle it was given changed: the version
// a commit stores comes back in its result.
func testNeverChangesArguments(h *harness) {
	exe := h.newExe("e")
	exe.CreatedAt = base.Add(123456789 * time.Nanosecond).In(time.FixedZone("UTC+3", 3*3600))
	exe.Timers = map[string]time.Time{"p": base.Add(999 * time.Nanosecond)}
	cases := []struct {
		what string
		exe  *stead.Execution
		b    stead.Bundle
		err  error
	}{
		{"a winning commit", exe, h.fullBundle(exe.ID, "win"), nil},
		{"a lost compare-and-swap", exe, h.fullBundle(exe.ID, "lost"), stead.ErrConflict},
		{"a refused commit", func() *stead.Execution { e := exe.Clone(); e.Status = "zombie"; return e }(), h.fullBundle(exe.ID, "bad"), stead.ErrInvalid},
	}
	for _, c := range cases {
		before, bundle := c.exe.Clone(), cloneBundle(c.b)
		got, err := h.s.Commit(h.ctx, c.exe, c.b)
		if c.err == nil {
			if err != nil || got.Version != 1 || len(got.Seqs) != 2 {
				h.Fatalf("%s = %+v, %v; want version 1 and two seqs", c.what, got, err)
			}
		} else {
			h.wantErr(c.what, err, c.err)
			if got.Version != 0 || got.Seqs != nil {
				h.Fatalf("%s returned %+v with its error, want the zero Committed", c.what, got)
			}
		}
		if !reflect.DeepEqual(c.exe, before) {
			h.Fatalf("%s changed the execution:\n got: %s\nwant: %s", c.what, dump(c.exe), dump(before))
		}
		if !reflect.DeepEqual(c.b, bundle) {
			h.Fatalf("%s changed the bundle:\n got: %s\nwant: %s", c.what, dump(c.b), dump(bundle))
		}
	}
}

// cloneBundle returns a deep copy of b.
func cloneBundle(b stead.Bundle) stead.Bundle {
	c := b
	c.Emits = slices.Clone(b.Emits)
	for i := range c.Emits {
		c.Emits[i].Event.Data = slices.Clone(c.Emits[i].Event.Data)
	}
	c.Spawns = slices.Clone(b.Spawns)
	for i := range c.Spawns {
		c.Spawns[i].Context = slices.Clone(c.Spawns[i].Context)
	}
	c.Timers = slices.Clone(b.Timers)
	c.AlsoProcessed = slices.Clone(b.AlsoProcessed)
	if b.Trace != nil {
		t := *b.Trace
		t.Actions = slices.Clone(t.Actions)
		t.Context = slices.Clone(t.Context)
		c.Trace = &t
	}
	return c
}
