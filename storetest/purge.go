package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/steadhq/stead"
)

var purgeRules = []rule{
	{name: "removes_every_row_of_the_execution_and_nothing_else", run: testPurge},
	{name: "sweeps_leftovers_of_a_missing_execution", run: testPurgeLeftovers},
	{name: "racing_a_commit_one_wins", run: testPurgeRacingCommit},
}

// purgeBundle is one step with one of every side effect; the outbox gets an event to the
// execution itself and one to peer.
func purgeBundle(id, peer string) stead.Bundle {
	return stead.Bundle{
		Emits: []stead.Emit{
			{Target: id, Event: stead.Event{ID: id + "-tick", Kind: "Tick"}},
			{Target: peer, Event: stead.Event{ID: id + "-to-peer", Kind: "Hello", Data: json.RawMessage(`{"from":"` + id + `"}`)}},
		},
		ProcessedEventID: id + "-ev",
		Timers:           []stead.TimerOp{schedule("P", base)},
		Spawns:           []stead.Spawn{{ChildID: id + "-child", RootPath: "", Context: json.RawMessage(`{}`)}},
		Trace:            &stead.TraceStep{EventKind: "Tick"},
	}
}

// outboxByTarget maps each target to the event ids of the pending entries addressed to it.
func (h *harness) outboxByTarget() map[string][]string {
	h.Helper()
	out := map[string][]string{}
	for _, e := range h.outbox("") {
		out[e.Target] = append(out[e.Target], e.Event.ID)
	}
	return out
}

func testPurge(h *harness) {
	victim, bystander := h.newExe("victim"), h.newExe("bystander")
	victim.Status, bystander.Status = stead.StatusDone, stead.StatusDone
	h.commit(victim, purgeBundle(victim.ID, bystander.ID))
	h.commit(bystander, purgeBundle(bystander.ID, victim.ID))
	stale := h.load(victim.ID)
	version := stale.Version
	ids := []string{victim.ID, bystander.ID}
	refs := []stead.EventRef{{ExecutionID: victim.ID, EventID: victim.ID + "-ev"}, {ExecutionID: bystander.ID, EventID: bystander.ID + "-ev"}}
	before := h.snap(ids, refs...)
	bystanderBefore := h.snap([]string{bystander.ID}, refs[1])

	// 1. The wrong version: false, and nothing is touched.
	for _, v := range []int64{version + 7, version - 1, 0} {
		ok, err := h.s.Purge(h.ctx, victim.ID, v)
		if err != nil || ok {
			h.Fatalf("Purge at version %d (stored %d) = %v, %v; want false, nil", v, version, ok, err)
		}
	}
	h.unchanged("a purge at the wrong version", before, ids, refs...)

	// 2. The right version removes every row of the victim.
	ok, err := h.s.Purge(h.ctx, victim.ID, version)
	if err != nil || !ok {
		h.Fatalf("Purge at the stored version = %v, %v; want true", ok, err)
	}
	h.mustNotExist(victim.ID)
	if h.processed(victim.ID, victim.ID+"-ev") {
		h.Fatal("the victim's dedupe marker survived the purge")
	}
	if tr := h.trace(victim.ID); len(tr) != 0 {
		h.Fatalf("the victim's trace survived the purge: %s", dump(tr))
	}
	if tm := h.timers(victim.ID); len(tm) != 0 {
		h.Fatalf("the victim's timers survived the purge: %s", dump(tm))
	}
	var dueIDs []string
	for _, t := range h.due(farFuture, 100) {
		dueIDs = append(dueIDs, t.ExecutionID)
	}
	if !slices.Equal(dueIDs, []string{bystander.ID}) {
		h.Fatalf("due timers after the purge belong to %v, want the bystander's alone", dueIDs)
	}
	// The outbox loses what was addressed to the victim (its own tick and the bystander's hello)
	// and keeps what the victim sent to the bystander.
	byTarget := h.outboxByTarget()
	if len(byTarget[victim.ID]) != 0 {
		h.Fatalf("outbox entries addressed to the purged execution survived: %v", byTarget[victim.ID])
	}
	if got, want := byTarget[bystander.ID], []string{victim.ID + "-to-peer", bystander.ID + "-tick"}; !slices.Equal(got, want) {
		h.Fatalf("outbox entries addressed to the bystander = %v, want %v", got, want)
	}
	var parents []string
	for _, s := range h.spawns("") {
		parents = append(parents, s.ParentID)
	}
	if !slices.Equal(parents, []string{bystander.ID}) {
		h.Fatalf("spawn intents after the purge come from %v, want the bystander alone", parents)
	}
	bystanderAfter := h.snap([]string{bystander.ID}, refs[1])
	// The bystander's own view (execution, marker, trace, timers) is untouched.
	if dump(bystanderBefore.Exes) != dump(bystanderAfter.Exes) || dump(bystanderBefore.Processed) != dump(bystanderAfter.Processed) ||
		dump(bystanderBefore.Trace) != dump(bystanderAfter.Trace) || dump(bystanderBefore.Timers) != dump(bystanderAfter.Timers) {
		h.Fatalf("the purge touched the bystander\nbefore %s\n after %s", dump(bystanderBefore), dump(bystanderAfter))
	}

	// 3. A second purge finds nothing.
	ok, err = h.s.Purge(h.ctx, victim.ID, version)
	if err != nil || ok {
		h.Fatalf("second Purge = %v, %v; want false, nil", ok, err)
	}

	// 4. A stale copy cannot bring the purged execution back.
	_, err = h.s.Commit(h.ctx, stale, stead.Bundle{})
	h.wantConflict("commit of a stale copy of a purged execution", err, victim.ID, version, -1)
	if stale.Version != version {
		h.Fatalf("stale copy's Version = %d, want %d", stale.Version, version)
	}
	_, err = h.s.Commit(h.ctx, stale, purgeBundle(victim.ID, bystander.ID))
	h.wantConflict("complex commit of a stale copy of a purged execution", err, victim.ID, version, -1)
	h.mustNotExist(victim.ID)

	// 5. A brand-new execution may reuse the id; it starts from nothing.
	reborn := h.newExe("victim")
	h.commit(reborn, stead.Bundle{Trace: &stead.TraceStep{EventKind: "Reborn"}})
	if got := h.load(victim.ID); got.Version != 1 {
		h.Fatalf("reborn execution at version %d, want 1", got.Version)
	}
	if h.processed(victim.ID, victim.ID+"-ev") {
		h.Fatal("the reborn execution inherited a dedupe marker")
	}
	if tr := h.trace(victim.ID); len(tr) != 1 || tr[0].Index != 0 || tr[0].EventKind != "Reborn" {
		h.Fatalf("the reborn execution's trace = %s, want one step at index 0", dump(tr))
	}

	// 6. Cleanup purges succeed at the loaded versions.
	for _, id := range ids {
		ok, err := h.s.Purge(h.ctx, id, h.load(id).Version)
		if err != nil || !ok {
			h.Fatalf("Purge(%s) = %v, %v; want true", id, ok, err)
		}
	}
	if left := h.outboxByTarget(); len(left) != 0 {
		h.Fatalf("outbox entries left after purging both: %v", left)
	}
	if left := h.spawns(""); len(left) != 0 {
		h.Fatalf("spawn intents left after purging both: %s", dump(left))
	}
}

// testPurgeLeftovers checks that purging an id with no execution returns false and still sweeps
// the rows addressed to it.
func testPurgeLeftovers(h *harness) {
	ghost := h.id("ghost")
	sender := h.newExe("sender")
	h.commit(sender, stead.Bundle{Emits: []stead.Emit{
		{Target: ghost, Event: stead.Event{ID: "boo", Kind: "Boo"}},
		{Target: sender.ID, Event: stead.Event{ID: "self", Kind: "Self"}},
	}})
	ok, err := h.s.Purge(h.ctx, ghost, 0)
	if err != nil || ok {
		h.Fatalf("Purge of a missing execution = %v, %v; want false, nil", ok, err)
	}
	byTarget := h.outboxByTarget()
	if len(byTarget[ghost]) != 0 || !slices.Equal(byTarget[sender.ID], []string{"self"}) {
		h.Fatalf("after purging a missing id the outbox holds %v; want only the sender's own entry", byTarget)
	}
	ok, err = h.s.Purge(h.ctx, h.id("never"), 5)
	if err != nil || ok {
		h.Fatalf("Purge of an id never seen = %v, %v; want false, nil", ok, err)
	}
}

// testPurgeRacingCommit races a purge against a commit from the same version, round after round.
// Exactly one wins: either the commit lands and the purge reports false, or the purge removes
// the execution and the commit loses its CAS; and a winning purge leaves no row of the step that
// lost (no marker, timer, trace or outbox entry addressed to the execution).
func testPurgeRacingCommit(h *harness) {
	for round := range 8 {
		name := fmt.Sprintf("e%d", round)
		exe := h.newExe(name)
		exe.Status = stead.StatusDone
		h.commit(exe, stead.Bundle{})
		id := exe.ID
		var (
			wg        sync.WaitGroup
			commitErr error
			purged    bool
			purgeErr  error
		)
		wg.Go(func() { _, commitErr = h.s.Commit(h.ctx, exe, purgeBundle(id, id)) })
		wg.Go(func() { purged, purgeErr = h.s.Purge(h.ctx, id, 1) })
		wg.Wait()
		if purgeErr != nil {
			h.Fatalf("round %d: Purge: %v", round, purgeErr)
		}
		switch {
		case commitErr == nil && !purged:
			if got := h.load(id); got.Version != 2 || !h.processed(id, id+"-ev") || len(h.timers(id)) != 1 {
				h.Fatalf("round %d: the commit won but its step is not whole", round)
			}
		case errors.Is(commitErr, stead.ErrConflict) && purged:
			h.mustNotExist(id)
			if h.processed(id, id+"-ev") || len(h.timers(id)) != 0 || len(h.trace(id)) != 0 || len(h.outboxByTarget()[id]) != 0 {
				h.Fatalf("round %d: the purge won but rows of the losing step remain", round)
			}
		default:
			h.Fatalf("round %d: commit error %v and purged %v; want exactly one winner", round, commitErr, purged)
		}
	}
}
