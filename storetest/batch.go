package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/steadhq/stead"
)

var batchRules = []rule{
	{name: "each_item_stands_alone", run: testBatchMixed},
	{name: "all_land", run: testBatchAllLand},
	{name: "empty_batch", run: testBatchEmpty},
	{name: "full_batch", run: testBatchFull},
	{name: "racing_batches_never_both_win", run: testBatchRace},
}

// testBatchMixed commits a batch where some items lose their CAS, some are invalid and one
// repeats an id: exactly those fail, each with its own error, and the others land whole.
func testBatchMixed(h *harness) {
	stale := h.newExe("stale")
	h.commit(stale, stead.Bundle{})
	winner := h.load(stale.ID)
	winner.Outcome = "winner"
	h.commit(winner, stead.Bundle{})
	existing := h.newExe("existing")
	h.commit(existing, stead.Bundle{})

	fresh := h.newExe("fresh")
	invalid := h.newExe("invalid")
	dup := h.newExe("fresh")
	dup.Outcome = "duplicate"
	missing := h.newExe("missing")
	missing.Version = 2
	badBundle := h.fullBundle(invalid.ID, "invalid")
	badBundle.Timers[0].Action = "bogus"

	items := []stead.CommitItem{
		{Execution: fresh, Bundle: h.fullBundle(fresh.ID, "fresh")},
		{Execution: stale, Bundle: h.fullBundle(stale.ID, "stale")},
		{Execution: invalid, Bundle: badBundle},
		{Execution: dup, Bundle: h.fullBundle(dup.ID, "dup")},
		{Execution: existing, Bundle: h.fullBundle(existing.ID, "existing")},
		{Execution: nil},
		{Execution: missing, Bundle: h.fullBundle(missing.ID, "missing")},
	}
	ids := []string{fresh.ID, stale.ID, invalid.ID, existing.ID, missing.ID}
	refs := []stead.EventRef{
		{ExecutionID: stale.ID, EventID: "stale-processed"},
		{ExecutionID: invalid.ID, EventID: "invalid-processed"},
		{ExecutionID: fresh.ID, EventID: "dup-processed"},
		{ExecutionID: missing.ID, EventID: "missing-processed"},
	}
	before := h.snap(ids, refs...)
	untouched := make([]*stead.Execution, len(items))
	for i := range items {
		untouched[i] = items[i].Execution.Clone()
	}
	res, err := h.s.CommitBatch(h.ctx, items)
	if err != nil {
		h.Fatalf("CommitBatch: %v", err)
	}
	if len(res) != len(items) {
		h.Fatalf("CommitBatch returned %d results for %d items", len(res), len(items))
	}
	for _, i := range []int{0, 4} {
		if res[i].Err != nil {
			h.Fatalf("item %d (%s): %v, want success", i, items[i].Execution.ID, res[i].Err)
		}
		if len(res[i].Seqs) != 2 || !increasing(res[i].Seqs) {
			h.Fatalf("item %d: seqs %v, want two increasing", i, res[i].Seqs)
		}
	}
	h.wantConflict("item 1 (stale)", res[1].Err, stale.ID, 1, 2, -1)
	h.wantErr("item 2 (invalid bundle)", res[2].Err, stead.ErrInvalid)
	h.wantErr("item 3 (repeats the id of item 0)", res[3].Err, stead.ErrInvalid)
	h.wantErr("item 5 (nil execution)", res[5].Err, stead.ErrInvalid)
	h.wantConflict("item 6 (missing above version 0)", res[6].Err, missing.ID, 2, -1)
	for i := range items {
		if !reflect.DeepEqual(items[i].Execution, untouched[i]) {
			h.Fatalf("item %d: CommitBatch changed the execution it was given", i)
		}
	}
	for i, want := range []int64{1, 0, 0, 0, 2, 0, 0} {
		if res[i].Version != want {
			h.Fatalf("item %d: result version %d, want %d", i, res[i].Version, want)
		}
	}

	// The winners landed whole, with the seqs the batch returned.
	for _, i := range []int{0, 4} {
		exe := items[i].Execution.Clone()
		exe.Version = res[i].Version
		h.sameExe(fmt.Sprintf("item %d stored", i), h.load(exe.ID), exe)
		if got := seqsOf(h.outbox(exe.ID)); !slices.Equal(got, res[i].Seqs) {
			h.Fatalf("item %d: outbox seqs %v, want the returned %v", i, got, res[i].Seqs)
		}
		tag := map[int]string{0: "fresh", 4: "existing"}[i]
		if !h.processed(exe.ID, tag+"-processed") {
			h.Fatalf("item %d: processed marker missing", i)
		}
		if len(h.timers(exe.ID)) != 1 || len(h.spawns(exe.ID)) != 1 || len(h.trace(exe.ID)) != 1 {
			h.Fatalf("item %d: side effects missing: timers %s spawns %s trace %s", i,
				dump(h.timers(exe.ID)), dump(h.spawns(exe.ID)), dump(h.trace(exe.ID)))
		}
	}
	if got := h.load(fresh.ID).Outcome; got == "duplicate" {
		h.Fatal("the repeated item overwrote the first")
	}
	if h.processed(fresh.ID, "dup-processed") {
		h.Fatal("the repeated item's side effects landed")
	}
	// The losers wrote nothing: their rows look as before.
	after := h.snap(ids, refs...)
	for _, id := range []string{stale.ID, invalid.ID, missing.ID} {
		if dump(before.Exes[id]) != dump(after.Exes[id]) || dump(before.Trace[id]) != dump(after.Trace[id]) || dump(before.Timers[id]) != dump(after.Timers[id]) {
			h.Fatalf("a failed item changed %s", id)
		}
		if n := len(h.outbox(id)) + len(h.spawns(id)); n != 0 {
			h.Fatalf("a failed item left %d outbox/spawn rows for %s", n, id)
		}
	}
	for _, r := range refs {
		if after.Processed[r.ExecutionID+" "+r.EventID] {
			h.Fatalf("a failed item recorded %v", r)
		}
	}
}

func testBatchAllLand(h *harness) {
	var items []stead.CommitItem
	for i := range 10 {
		exe := h.newExe(fmt.Sprintf("e%02d", i))
		if i%2 == 1 { // half of them are stored already
			h.commit(exe, stead.Bundle{})
		}
		b := stead.Bundle{ProcessedEventID: fmt.Sprintf("ev-%d", i)}
		for j := range i % 3 {
			b.Emits = append(b.Emits, emit(exe.ID, fmt.Sprintf("e%d-%d", i, j), "Tick"))
		}
		items = append(items, stead.CommitItem{Execution: exe, Bundle: b})
	}
	res, err := h.s.CommitBatch(h.ctx, items)
	if err != nil || len(res) != len(items) {
		h.Fatalf("CommitBatch = %d results, %v", len(res), err)
	}
	var all []int64
	for i, r := range res {
		exe := items[i].Execution
		if r.Err != nil {
			h.Fatalf("item %d: %v", i, r.Err)
		}
		if want := int64(1 + i%2); r.Version != want || exe.Version != want-1 {
			h.Fatalf("item %d: committed version %d from %d, want %d from an untouched %d", i, r.Version, exe.Version, want, want-1)
		}
		if len(r.Seqs) != i%3 || !slices.Equal(seqsOf(h.outbox(exe.ID)), r.Seqs) {
			h.Fatalf("item %d: seqs %v, outbox %v", i, r.Seqs, seqsOf(h.outbox(exe.ID)))
		}
		if !h.processed(exe.ID, fmt.Sprintf("ev-%d", i)) {
			h.Fatalf("item %d: marker missing", i)
		}
		all = append(all, r.Seqs...)
	}
	if !increasing(all) {
		h.Fatalf("seqs across the batch %v, want increasing in item order", all)
	}
}

func testBatchEmpty(h *harness) {
	res, err := h.s.CommitBatch(h.ctx, nil)
	if err != nil || len(res) != 0 {
		h.Fatalf("CommitBatch(nil) = %v, %v; want no results, nil", res, err)
	}
}

// testBatchRace has two batches commit the same executions from the same versions, in opposite
// orders (a backend that locks rows in item order would deadlock), round after round. For every
// execution exactly one batch wins.
func testBatchRace(h *harness) {
	const n, rounds = 6, 4
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("e%d", i))
		h.commit(h.newExe(names[i]), stead.Bundle{})
	}
	for round := range rounds {
		var (
			batches [2][]stead.CommitItem
			results [2][]stead.CommitResult
			errs    [2]error
		)
		for b := range 2 {
			for _, name := range names {
				exe := h.load(h.id(name))
				exe.Outcome = fmt.Sprintf("round-%d-batch-%d", round, b)
				batches[b] = append(batches[b], stead.CommitItem{Execution: exe, Bundle: stead.Bundle{
					Emits:            []stead.Emit{emit(exe.ID, fmt.Sprintf("%s-r%d-b%d", name, round, b), "Won")},
					ProcessedEventID: exe.Outcome,
				}})
			}
		}
		slices.Reverse(batches[1])
		var wg sync.WaitGroup
		for b := range 2 {
			wg.Go(func() { results[b], errs[b] = h.s.CommitBatch(h.ctx, batches[b]) })
		}
		wg.Wait()
		for b := range 2 {
			if errs[b] != nil {
				h.Fatalf("round %d: batch %d failed as a whole: %v", round, b, errs[b])
			}
		}
		for i, name := range names {
			r0, r1 := results[0][i], results[1][n-1-i]
			wins := 0
			var winner string
			for b, r := range []stead.CommitResult{r0, r1} {
				switch {
				case r.Err == nil:
					wins++
					winner = fmt.Sprintf("round-%d-batch-%d", round, b)
				case !errors.Is(r.Err, stead.ErrConflict):
					h.Fatalf("round %d, %s, batch %d: %v, want success or ErrConflict", round, name, b, r.Err)
				}
			}
			if wins != 1 {
				h.Fatalf("round %d, %s: %d batches won, want exactly 1 (%v / %v)", round, name, wins, r0.Err, r1.Err)
			}
			got := h.load(h.id(name))
			if got.Outcome != winner || got.Version != int64(round+2) {
				h.Fatalf("round %d, %s: stored %q at %d, want %q at %d", round, name, got.Outcome, got.Version, winner, round+2)
			}
			if !h.processed(got.ID, winner) {
				h.Fatalf("round %d, %s: the winner's marker is missing", round, name)
			}
		}
	}
	for _, name := range names {
		if got := len(h.outbox(h.id(name))); got != rounds {
			h.Fatalf("%s: %d outbox entries, want one per round (%d)", name, got, rounds)
		}
	}
}

// testBatchFull commits MaxBatch new executions in one batch, one of them with a lost CAS.
func testBatchFull(h *harness) {
	taken := h.newExe(fmt.Sprintf("e%04d", 500))
	h.commit(taken, stead.Bundle{})
	items := make([]stead.CommitItem, stead.MaxBatch)
	for i := range items {
		exe := h.newExe(fmt.Sprintf("e%04d", i))
		items[i] = stead.CommitItem{Execution: exe, Bundle: stead.Bundle{ProcessedEventID: "created"}}
	}
	res, err := h.s.CommitBatch(h.ctx, items)
	if err != nil || len(res) != stead.MaxBatch {
		h.Fatalf("CommitBatch of MaxBatch items = %d results, %v", len(res), err)
	}
	for i, r := range res {
		if i == 500 {
			h.wantConflict("the item whose id was taken", r.Err, taken.ID, 0, 1, -1)
			continue
		}
		if r.Err != nil || r.Version != 1 {
			h.Fatalf("item %d: %v, version %d", i, r.Err, r.Version)
		}
	}
	if n := len(h.collect(stead.ListFilter{DefinitionID: h.id("def"), Limit: stead.MaxListLimit})); n != stead.MaxBatch {
		h.Fatalf("%d executions listed after the batch, want %d", n, stead.MaxBatch)
	}
	if h.processed(taken.ID, "created") || !h.processed(items[999].Execution.ID, "created") {
		h.Fatal("markers of the full batch are wrong")
	}
}
