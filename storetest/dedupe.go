package storetest

import (
	"errors"
	"fmt"

	"github.com/steadhq/stead"
)

var dedupeRules = []rule{
	{name: "marker_recorded_with_commit", run: testDedupeMarker},
	{name: "load_for_event", run: testLoadForEvent},
	{name: "load_for_events_aligned", run: testLoadForEvents},
	{name: "load_for_events_repeated_execution", run: testLoadForEventsRepeated},
	{name: "also_processed_recorded", run: testAlsoProcessed},
	{name: "also_processed_lost_cas_records_none", run: testAlsoProcessedLost},
	{name: "also_processed_invalid_writes_nothing", run: testAlsoProcessedInvalid},
}

func testDedupeMarker(h *harness) {
	a, b := h.newExe("a"), h.newExe("b")
	h.commit(a, stead.Bundle{ProcessedEventID: "ev-1"})
	h.commit(b, stead.Bundle{})
	for _, c := range []struct {
		id, event string
		want      bool
	}{
		{a.ID, "ev-1", true},
		{a.ID, "ev-2", false},
		{b.ID, "ev-1", false}, // markers are per execution
		{h.id("missing"), "ev-1", false},
	} {
		if got := h.processed(c.id, c.event); got != c.want {
			h.Fatalf("IsProcessed(%s, %s) = %v, want %v", c.id, c.event, got, c.want)
		}
	}
	// Later commits keep the marker; recording it again is harmless; markers accumulate.
	h.commit(a, stead.Bundle{})
	h.commit(a, stead.Bundle{ProcessedEventID: "ev-1"})
	h.commit(a, h.fullBundle(a.ID, "ev-2"))
	for _, ev := range []string{"ev-1", "ev-2-processed"} {
		if !h.processed(a.ID, ev) {
			h.Fatalf("IsProcessed(%s, %s) = false after later commits", a.ID, ev)
		}
	}
}

func testLoadForEvent(h *harness) {
	exe := h.newExe("e")
	h.commit(exe, stead.Bundle{ProcessedEventID: "seen"})
	for _, c := range []struct {
		event string
		want  bool
	}{{"seen", true}, {"unseen", false}} {
		got, processed, err := h.s.LoadForEvent(h.ctx, exe.ID, c.event)
		if err != nil {
			h.Fatalf("LoadForEvent(%s, %s): %v", exe.ID, c.event, err)
		}
		if processed != c.want {
			h.Fatalf("LoadForEvent(%s, %s) processed = %v, want %v", exe.ID, c.event, processed, c.want)
		}
		h.sameExe("LoadForEvent", got, exe)
	}
	got, processed, err := h.s.LoadForEvent(h.ctx, h.id("missing"), "seen")
	if !errors.Is(err, stead.ErrNotFound) || got != nil || processed {
		h.Fatalf("LoadForEvent of a missing execution = %v, %v, %v; want nil, false, ErrNotFound", got, processed, err)
	}
}

func testLoadForEvents(h *harness) {
	a, b := h.newExe("a"), h.newExe("b")
	h.commit(a, stead.Bundle{ProcessedEventID: "ev-a"})
	b.Status = stead.StatusSuspended
	h.commit(b, stead.Bundle{ProcessedEventID: "ev-b"})
	missing := h.id("missing")
	refs := []stead.EventRef{
		{ExecutionID: a.ID, EventID: "ev-a"},
		{ExecutionID: missing, EventID: "ev-a"},
		{ExecutionID: b.ID, EventID: "ev-a"},
		{ExecutionID: a.ID, EventID: "ev-b"},
		{ExecutionID: b.ID, EventID: "ev-b"},
		{ExecutionID: a.ID, EventID: "ev-a"}, // repeats are answered too
	}
	want := []struct {
		exe       *stead.Execution
		processed bool
	}{{a, true}, {nil, false}, {b, false}, {a, false}, {b, true}, {a, true}}
	got, err := h.s.LoadForEvents(h.ctx, refs)
	if err != nil {
		h.Fatalf("LoadForEvents: %v", err)
	}
	if len(got) != len(refs) {
		h.Fatalf("LoadForEvents returned %d results for %d refs", len(got), len(refs))
	}
	for i, w := range want {
		what := fmt.Sprintf("LoadForEvents result %d (%v)", i, refs[i])
		if got[i].Processed != w.processed {
			h.Fatalf("%s: Processed = %v, want %v", what, got[i].Processed, w.processed)
		}
		if w.exe == nil {
			if got[i].Execution != nil {
				h.Fatalf("%s: got an execution for a missing id", what)
			}
			continue
		}
		if got[i].Execution == nil {
			h.Fatalf("%s: nil execution", what)
		}
		h.sameExe(what, got[i].Execution, w.exe)
	}
	if got[0].Execution == got[5].Execution {
		h.Fatal("LoadForEvents returned the same *Execution for two refs; each result must be its own copy")
	}
	empty, err := h.s.LoadForEvents(h.ctx, nil)
	if err != nil || len(empty) != 0 {
		h.Fatalf("LoadForEvents(nil) = %v, %v; want no results, nil", empty, err)
	}
	// A full batch is accepted.
	full := make([]stead.EventRef, stead.MaxBatch)
	for i := range full {
		full[i] = stead.EventRef{ExecutionID: a.ID, EventID: fmt.Sprintf("ev-%d", i)}
	}
	full[stead.MaxBatch-1].EventID = "ev-a"
	res, err := h.s.LoadForEvents(h.ctx, full)
	if err != nil || len(res) != stead.MaxBatch || !res[stead.MaxBatch-1].Processed || res[0].Processed {
		h.Fatalf("LoadForEvents of MaxBatch refs: %d results, err %v", len(res), err)
	}
}
