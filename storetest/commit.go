package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/steadhq/stead"
)

var commitRules = []rule{
	{name: "FirstCommitInserts", run: testFirstCommitInserts},
	{name: "LimitSizedInputLands", run: testLimitSizedInput},
	{name: "StateOnlyCommitReturnsNoSeqs", run: testStateOnlyCommit},
	{name: "CASBumpsVersion", run: testCASBumps},
	{name: "StaleCommitConflicts", run: testStaleCommitConflicts},
	{name: "NewExecutionOverExistingConflicts", run: testNewOverExisting},
	{name: "MissingExecutionAboveVersionZeroConflicts", run: testMissingAboveZero},
	{name: "RacingCommitsExactlyOneWins", run: testRacingCommits},
	{name: "InvalidItemWritesNothing", run: testInvalidItemWritesNothing},
	{name: "NoAliasing", run: testNoAliasing},
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
	seqs, err := h.s.Commit(h.ctx, exe, stead.Bundle{ProcessedEventID: "ev-1"})
	if err != nil || len(seqs) != 0 {
		h.Fatalf("state-only Commit = %v, %v; want no seqs, nil", seqs, err)
	}
	if !h.processed(exe.ID, "ev-1") {
		h.Fatal("state-only commit did not record its processed event id")
	}
	if err := stead.Save(h.ctx, h.s, exe); err != nil {
		h.Fatalf("Save: %v", err)
	}
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
		h.Fatalf("the loser's Version is %d after a lost CAS, want 1 (restored)", loser.Version)
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
				_, err := h.s.Commit(h.ctx, mine, b)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					if mine.Version != cur.Version+1 {
						failures = append(failures, fmt.Errorf("winner Version %d, want %d", mine.Version, cur.Version+1))
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
	{"EmitWithoutEventID", func(e *stead.Execution, b *stead.Bundle) { b.Emits[1].Event.ID = "" }},
	{"EmitWithoutKind", func(e *stead.Execution, b *stead.Bundle) { b.Emits[0].Event.Kind = "" }},
	{"EmitDataNotJSON", func(e *stead.Execution, b *stead.Bundle) { b.Emits[0].Event.Data = json.RawMessage(`{"n":`) }},
	{"EmitDataOversized", func(e *stead.Execution, b *stead.Bundle) { b.Emits[0].Event.Data = bigJSON(stead.MaxPayload + 1) }},
	{"EmitTargetNUL", func(e *stead.Execution, b *stead.Bundle) { b.Emits[1].Target = "x\x00y" }},
	{"EmitEventIDInvalidUTF8", func(e *stead.Execution, b *stead.Bundle) { b.Emits[1].Event.ID = "bad\xff" }},
	{"SpawnWithoutChildID", func(e *stead.Execution, b *stead.Bundle) { b.Spawns[0].ChildID = "" }},
	{"SpawnContextNotObject", func(e *stead.Execution, b *stead.Bundle) { b.Spawns[0].Context = json.RawMessage(`[1,2]`) }},
	{"TimerUnknownAction", func(e *stead.Execution, b *stead.Bundle) { b.Timers[0].Action = "snooze" }},
	{"TimerScheduleWithoutFireTime", func(e *stead.Execution, b *stead.Bundle) {
		b.Timers = append(b.Timers, stead.TimerOp{Action: stead.TimerSchedule, Path: "late"})
	}},
	{"TimerEmptyPath", func(e *stead.Execution, b *stead.Bundle) { b.Timers[0].Path = "" }},
	{"TraceContextNotJSON", func(e *stead.Execution, b *stead.Bundle) { b.Trace.Context = json.RawMessage(`nope`) }},
	{"TraceKindInvalidUTF8", func(e *stead.Execution, b *stead.Bundle) { b.Trace.EventKind = "\xc3\x28" }},
	{"TraceContextNULEscape", func(e *stead.Execution, b *stead.Bundle) { b.Trace.Context = json.RawMessage(`{"a":"\u0000"}`) }},
	{"ProcessedIDNUL", func(e *stead.Execution, b *stead.Bundle) { b.ProcessedEventID = "ev\x00" }},
	{"ProcessedIDInvalidUTF8", func(e *stead.Execution, b *stead.Bundle) { b.ProcessedEventID = "ev\xfe" }},
	{"ExecutionUnknownStatus", func(e *stead.Execution, b *stead.Bundle) { e.Status = "zombie" }},
	{"ExecutionEmptyDefinition", func(e *stead.Execution, b *stead.Bundle) { e.DefinitionID = "" }},
	{"ExecutionContextNotObject", func(e *stead.Execution, b *stead.Bundle) { e.Context = json.RawMessage(`"text"`) }},
	{"ExecutionContextOversized", func(e *stead.Execution, b *stead.Bundle) { e.Context = bigObject(stead.MaxPayload + 1) }},
	{"ExecutionPriorityOutOfRange", func(e *stead.Execution, b *stead.Bundle) { e.Priority = stead.MaxPriority + 1 }},
	{"ExecutionActivePathNUL", func(e *stead.Execution, b *stead.Bundle) { e.ActivePath = "a\x00" }},
	{"ExecutionRecordOversized", func(e *stead.Execution, b *stead.Bundle) {
		// Each result fits MaxPayload; together they exceed MaxRecord.
		for i := range stead.MaxRecord/stead.MaxPayload + 1 {
			e.Children[fmt.Sprintf("big-%d", i)] = stead.ChildState{RootPath: "p", Result: bigJSON(stead.MaxPayload - 16)}
		}
	}},
	{"ExecutionDeferredEventWithoutID", func(e *stead.Execution, b *stead.Bundle) { e.Deferred[0].ID = "" }},
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
