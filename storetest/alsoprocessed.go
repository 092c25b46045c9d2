package storetest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/steadhq/stead"
)

// A worker applies up to this many queued events of one execution in one step.
const workerEvents = 16

// alsoIDs returns n event ids for Bundle.AlsoProcessed, tagged.
func alsoIDs(tag string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-also-%d", tag, i)
	}
	return ids
}

// alsoItem is one commit of an AlsoProcessed case: the execution (new, or stored first) and its
// bundle.
type alsoItem struct {
	name   string
	stored bool // commit the execution once before, so that this commit updates it
	full   bool // the full bundle rather than a state-only one
	also   int  // how many AlsoProcessed ids
}

// testAlsoProcessed commits bundles with AlsoProcessed through Commit and CommitBatch, alone and
// mixed with items without it, and checks that every event of every winner is recorded, on its
// execution only, as IsProcessed and LoadForEvents report them.
func testAlsoProcessed(h *harness) {
	cases := []struct {
		name  string
		batch bool
		items []alsoItem
	}{
		{"commit_new_state_only", false, []alsoItem{{name: "a", also: 3}}},
		{"commit_stored_full_bundle", false, []alsoItem{{name: "a", stored: true, full: true, also: workerEvents - 1}}},
		{"commit_max_batch", false, []alsoItem{{name: "a", stored: true, also: stead.MaxBatch}}},
		{"batch_of_one", true, []alsoItem{{name: "a", stored: true, also: workerEvents - 1}}},
		{"batch_mixed", true, []alsoItem{
			{name: "a", also: 2},
			{name: "b", stored: true, full: true, also: workerEvents - 1},
			{name: "c", stored: true},             // ProcessedEventID only
			{name: "d", full: true},               // a full bundle without AlsoProcessed
			{name: "e", stored: true, also: 1},    // state only, stored
			{name: "f", stored: true, full: true}, // full, stored, without AlsoProcessed
			{name: "g", full: true, also: 3},      // full, new
			{name: "h", stored: true, also: 7},    // another state-only with AlsoProcessed
			{name: "i", stored: false, also: 0},   // plain new
			{name: "j", stored: true, full: true, also: 1},
		}},
	}
	for _, c := range cases {
		exes := make([]*stead.Execution, len(c.items))
		items := make([]stead.CommitItem, len(c.items))
		for i, it := range c.items {
			tag := c.name + "-" + it.name
			exe := h.newExe(tag)
			if it.stored {
				h.commit(exe, stead.Bundle{ProcessedEventID: tag + "-before"})
			}
			b := stead.Bundle{ProcessedEventID: tag + "-processed"}
			if it.full {
				b = h.fullBundle(exe.ID, tag)
			}
			if it.also > 0 {
				b.AlsoProcessed = alsoIDs(tag, it.also)
			}
			exes[i], items[i] = exe, stead.CommitItem{Execution: exe, Bundle: b}
		}
		given := make([]stead.Bundle, len(items))
		for i := range items {
			given[i] = cloneBundle(items[i].Bundle)
		}
		if c.batch {
			res, err := h.s.CommitBatch(h.ctx, items)
			if err != nil || len(res) != len(items) {
				h.Fatalf("%s: CommitBatch = %d results, %v", c.name, len(res), err)
			}
			for i, r := range res {
				// One version per event the commit applies.
				want := exes[i].Version + 1 + int64(c.items[i].also)
				if r.Err != nil || r.Version != want {
					h.Fatalf("%s: item %d = version %d, %v; want version %d", c.name, i, r.Version, r.Err, want)
				}
				exes[i].Version = r.Version
			}
		} else {
			for i := range items {
				h.commit(exes[i], items[i].Bundle)
			}
		}
		for i := range items {
			if got := h.load(exes[i].ID); got.Version != exes[i].Version {
				h.Fatalf("%s: item %d is stored at version %d, want %d (one per event applied)", c.name, i, got.Version, exes[i].Version)
			}
			if !slices.Equal(items[i].Bundle.AlsoProcessed, given[i].AlsoProcessed) {
				h.Fatalf("%s: item %d: the commit changed the AlsoProcessed it was given", c.name, i)
			}
		}
		// Every event of every item, an event never applied, and each item's events asked of
		// the next execution, where they are not recorded: interleaved, as a worker asks.
		var refs []stead.EventRef
		var want []bool
		ask := func(id, ev string, processed bool) {
			refs, want = append(refs, stead.EventRef{ExecutionID: id, EventID: ev}), append(want, processed)
		}
		for i, it := range items {
			other := exes[(i+1)%len(exes)].ID
			events := append([]string{it.Bundle.ProcessedEventID}, it.Bundle.AlsoProcessed...)
			for _, ev := range events {
				ask(exes[i].ID, ev, true)
				if other != exes[i].ID {
					ask(other, ev, false)
				}
			}
			ask(exes[i].ID, c.name+"-never", false)
		}
		for start := 0; start < len(refs); start += stead.MaxBatch {
			end := min(start+stead.MaxBatch, len(refs))
			got, err := h.s.LoadForEvents(h.ctx, refs[start:end])
			if err != nil || len(got) != end-start {
				h.Fatalf("%s: LoadForEvents = %d results, %v", c.name, len(got), err)
			}
			for k, g := range got {
				r := refs[start+k]
				if g.Processed != want[start+k] {
					h.Fatalf("%s: LoadForEvents %v: Processed = %v, want %v", c.name, r, g.Processed, want[start+k])
				}
				if g.Execution == nil || g.Execution.ID != r.ExecutionID {
					h.Fatalf("%s: LoadForEvents %v: execution %v", c.name, r, g.Execution)
				}
			}
		}
		for k, r := range refs {
			if k%7 != 0 && len(refs) > 64 {
				continue // a sample of the large cases: IsProcessed is one call per pair
			}
			if got := h.processed(r.ExecutionID, r.EventID); got != want[k] {
				h.Fatalf("%s: IsProcessed(%s, %s) = %v, want %v", c.name, r.ExecutionID, r.EventID, got, want[k])
			}
		}
		for i := range items {
			h.sameExe(c.name+": stored "+exes[i].ID, h.load(exes[i].ID), exes[i])
		}
	}
}

// testAlsoProcessedLost loses compare-and-swaps with AlsoProcessed, through Commit and in a
// batch beside a winner, and checks that the losers recorded none of their events while the
// winner recorded all of its own.
func testAlsoProcessedLost(h *harness) {
	stored := h.newExe("stored")
	h.commit(stored, stead.Bundle{ProcessedEventID: "first"})
	h.commit(stored, stead.Bundle{})
	stale := h.load(stored.ID)
	stale.Version = 1
	fresh := h.newExe("stored") // a new execution over the stored one
	missing := h.newExe("missing")
	missing.Version = 3
	cases := []struct {
		name  string
		exe   *stead.Execution
		found []int64
	}{
		{"stale", stale, []int64{2, -1}},
		{"new_over_existing", fresh, []int64{2, -1}},
		{"missing_above_zero", missing, []int64{-1}},
	}
	for _, c := range cases {
		b := stead.Bundle{ProcessedEventID: c.name + "-processed", AlsoProcessed: alsoIDs(c.name, workerEvents-1)}
		full := h.fullBundle(c.exe.ID, c.name+"-full")
		full.AlsoProcessed = alsoIDs(c.name+"-full", 3)
		for _, bundle := range []stead.Bundle{b, full} {
			refs := processedRefs(c.exe.ID, bundle)
			before := h.snap([]string{c.exe.ID}, refs...)
			_, err := h.s.Commit(h.ctx, c.exe, bundle)
			h.wantConflict("Commit "+c.name, err, c.exe.ID, c.exe.Version, c.found...)
			h.unchanged("Commit "+c.name, before, []string{c.exe.ID}, refs...)
		}

		// In a batch, beside a winner that records all of its events.
		winner := h.newExe("winner-" + c.name)
		wb := stead.Bundle{ProcessedEventID: "won", AlsoProcessed: alsoIDs("won", 4)}
		refs := processedRefs(c.exe.ID, b)
		before := h.snap([]string{c.exe.ID}, refs...)
		res, err := h.s.CommitBatch(h.ctx, []stead.CommitItem{{Execution: winner, Bundle: wb}, {Execution: c.exe, Bundle: b}})
		if err != nil || len(res) != 2 || res[0].Err != nil {
			h.Fatalf("CommitBatch %s: %+v, %v; want the winner to land", c.name, res, err)
		}
		h.wantConflict("CommitBatch "+c.name, res[1].Err, c.exe.ID, c.exe.Version, c.found...)
		h.unchanged("CommitBatch "+c.name, before, []string{c.exe.ID}, refs...)
		for _, r := range processedRefs(winner.ID, wb) {
			if !h.processed(r.ExecutionID, r.EventID) {
				h.Fatalf("CommitBatch %s: the winner's %s is not recorded", c.name, r.EventID)
			}
		}
	}
	// The same events commit once the version is right.
	b := stead.Bundle{ProcessedEventID: "stale-processed", AlsoProcessed: alsoIDs("stale", workerEvents-1)}
	h.commit(h.load(stored.ID), b)
	for _, r := range processedRefs(stored.ID, b) {
		if !h.processed(r.ExecutionID, r.EventID) {
			h.Fatalf("%s not recorded by the commit that won", r.EventID)
		}
	}
}

// processedRefs returns the refs of every event b records for id.
func processedRefs(id string, b stead.Bundle) []stead.EventRef {
	refs := []stead.EventRef{{ExecutionID: id, EventID: b.ProcessedEventID}}
	for _, ev := range b.AlsoProcessed {
		refs = append(refs, stead.EventRef{ExecutionID: id, EventID: ev})
	}
	return refs
}

// badAlso are bundles whose AlsoProcessed the Store must refuse.
var badAlso = []struct {
	name   string
	mutate func(b *stead.Bundle)
}{
	{"empty_id", func(b *stead.Bundle) { b.AlsoProcessed = []string{"x-1", ""} }},
	{"nul", func(b *stead.Bundle) { b.AlsoProcessed = []string{"x-1", "x\x00"} }},
	{"invalid_utf8", func(b *stead.Bundle) { b.AlsoProcessed = []string{"x\xff"} }},
	{"oversized", func(b *stead.Bundle) { b.AlsoProcessed = []string{strings.Repeat("x", stead.MaxIDLen+1)} }},
	{"duplicate", func(b *stead.Bundle) { b.AlsoProcessed = []string{"x-1", "x-2", "x-1"} }},
	{"equal_to_processed", func(b *stead.Bundle) { b.AlsoProcessed = []string{"x-1", b.ProcessedEventID} }},
	{"without_processed", func(b *stead.Bundle) { b.ProcessedEventID, b.AlsoProcessed = "", []string{"x-1", "x-2"} }},
	{"too_many", func(b *stead.Bundle) { b.AlsoProcessed = alsoIDs("x", stead.MaxBatch+1) }},
}

// testAlsoProcessedInvalid commits each bad AlsoProcessed, to a new and to a stored execution,
// through Commit and in a batch beside a valid item, and checks that it is refused with
// ErrInvalid, that it wrote nothing, and that the caller's slice is untouched.
func testAlsoProcessedInvalid(h *harness) {
	stored := h.newExe("stored")
	h.commit(stored, h.fullBundle(stored.ID, "first"))
	for _, c := range badAlso {
		for _, target := range []string{"new", "stored"} {
			for _, full := range []bool{false, true} {
				for _, batch := range []bool{false, true} {
					what := fmt.Sprintf("%s (%s execution, full bundle %v, batch %v)", c.name, target, full, batch)
					exe := h.newExe("new-" + c.name)
					if target == "stored" {
						exe = h.load(stored.ID)
					}
					b := stead.Bundle{ProcessedEventID: "bad-" + c.name + "-processed"}
					if full {
						b = h.fullBundle(exe.ID, "bad-"+c.name)
					}
					c.mutate(&b)
					given := slices.Clone(b.AlsoProcessed)
					refs := []stead.EventRef{
						{ExecutionID: exe.ID, EventID: "bad-" + c.name + "-processed"},
						{ExecutionID: exe.ID, EventID: "x-1"}, {ExecutionID: exe.ID, EventID: "x-2"},
					}
					ids := []string{exe.ID, stored.ID}
					before := h.snap(ids, refs...)
					var err error
					if batch {
						other := h.newExe(fmt.Sprintf("other-%s-%s-%v", c.name, target, full))
						res, berr := h.s.CommitBatch(h.ctx, []stead.CommitItem{
							{Execution: exe, Bundle: b}, {Execution: other, Bundle: stead.Bundle{ProcessedEventID: "ok"}},
						})
						if berr != nil || len(res) != 2 || res[1].Err != nil {
							h.Fatalf("%s: CommitBatch = %+v, %v; want the valid item to land", what, res, berr)
						}
						if !h.processed(other.ID, "ok") {
							h.Fatalf("%s: the valid item's marker is missing", what)
						}
						err = res[0].Err
					} else {
						_, err = h.s.Commit(h.ctx, exe, b)
					}
					h.wantErr(what, err, stead.ErrInvalid)
					h.unchanged(what, before, ids, refs...)
					if !slices.Equal(b.AlsoProcessed, given) {
						h.Fatalf("%s: the refused commit changed the AlsoProcessed it was given", what)
					}
				}
			}
		}
	}
}

// testLoadForEventsRepeated asks LoadForEvents for many events of one execution at once, as a
// worker does for the events it queued: each ref gets its own Processed and its own copy of the
// execution, which the caller may change without touching the others.
func testLoadForEventsRepeated(h *harness) {
	a, b := h.newExe("a"), h.newExe("b")
	h.commit(a, stead.Bundle{ProcessedEventID: "a-0", AlsoProcessed: []string{"a-2", "a-4", "a-6", "a-8", "a-10", "a-12", "a-14"}})
	h.commit(b, stead.Bundle{ProcessedEventID: "b-1"})
	missing := h.id("missing")
	var refs []stead.EventRef
	var want []bool
	for i := range workerEvents {
		refs = append(refs, stead.EventRef{ExecutionID: a.ID, EventID: fmt.Sprintf("a-%d", i)})
		want = append(want, i%2 == 0)
		if i%4 == 1 {
			refs = append(refs, stead.EventRef{ExecutionID: b.ID, EventID: fmt.Sprintf("b-%d", i)})
			want = append(want, i == 1)
			refs = append(refs, stead.EventRef{ExecutionID: missing, EventID: fmt.Sprintf("a-%d", i)})
			want = append(want, false)
		}
	}
	got, err := h.s.LoadForEvents(h.ctx, refs)
	if err != nil || len(got) != len(refs) {
		h.Fatalf("LoadForEvents = %d results, %v; want %d", len(got), err, len(refs))
	}
	seen := map[*stead.Execution]int{}
	for i, g := range got {
		what := fmt.Sprintf("LoadForEvents result %d (%v)", i, refs[i])
		if g.Processed != want[i] {
			h.Fatalf("%s: Processed = %v, want %v", what, g.Processed, want[i])
		}
		switch refs[i].ExecutionID {
		case missing:
			if g.Execution != nil {
				h.Fatalf("%s: an execution for a missing id", what)
			}
			continue
		case a.ID:
			h.sameExe(what, g.Execution, a)
		default:
			h.sameExe(what, g.Execution, b)
		}
		if j, ok := seen[g.Execution]; ok {
			h.Fatalf("%s: the same *Execution as result %d; each result must be its own copy", what, j)
		}
		seen[g.Execution] = i
	}
	// Changing every reference field of the first copy leaves the others as they were.
	first := got[0].Execution
	first.History["main"] = "changed"
	first.Context[2] = 'X'
	first.Children["region-a"] = stead.ChildState{RootPath: "changed"}
	first.InvokeSeq["main/par"] = 99
	first.Deferred[0].Data[2] = 'X'
	first.Deferred[0].ID = "changed"
	first.StartContext[2] = 'X'
	first.DeadLetter.Event.Data[2] = 'X'
	first.DeadLetter.History["main"] = "changed"
	first.DeadLetter.Timers["main/charging"] = base
	for i, g := range got[1:] {
		if refs[i+1].ExecutionID == a.ID {
			h.sameExe(fmt.Sprintf("result %d after changing result 0", i+1), g.Execution, a)
		}
	}
}
