package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/steadhq/stead"
)

// traceCap is the ring cap the trace rules ask their store for.
const traceCap = 3

var traceRules = []rule{
	{name: "ring_cap_and_stable_indexes", cfg: Config{TraceCap: traceCap}, run: testTraceRing},
	{name: "append_trace", cfg: Config{TraceCap: traceCap}, run: testAppendTrace},
	{name: "steps_round_trip", run: testTraceRoundTrip},
}

func indexes(steps []stead.TraceStep) []int64 {
	out := make([]int64, len(steps))
	for i, s := range steps {
		out[i] = s.Index
	}
	return out
}

func step(n int) *stead.TraceStep {
	return &stead.TraceStep{
		Index:     999, // the store assigns indexes; what the caller passes is ignored
		EventID:   fmt.Sprintf("ev-%d", n),
		EventKind: "Tick",
		From:      fmt.Sprintf("s%d", n),
		To:        fmt.Sprintf("s%d", n+1),
		Actions:   []string{"count", "log"},
		Context:   json.RawMessage(fmt.Sprintf(`{"n": %d}`, n)),
		At:        base.Add(time.Duration(n)*time.Second + 321*time.Nanosecond),
	}
}

func testTraceRing(h *harness) {
	exe, other := h.newExe("e"), h.newExe("other")
	for n := range 3 {
		h.commit(exe, stead.Bundle{Trace: step(n)})
	}
	if got := indexes(h.trace(exe.ID)); !slices.Equal(got, []int64{0, 1, 2}) {
		h.Fatalf("indexes after three steps = %v, want [0 1 2]", got)
	}
	h.commit(other, stead.Bundle{Trace: step(0)})
	for n := 3; n < 5; n++ {
		h.commit(exe, stead.Bundle{Trace: step(n)})
	}
	got := h.trace(exe.ID)
	if !slices.Equal(indexes(got), []int64{2, 3, 4}) {
		h.Fatalf("indexes after five steps with cap %d = %v, want [2 3 4]", traceCap, indexes(got))
	}
	for i, st := range got {
		want := *step(int(st.Index))
		want.Index = st.Index
		if dump(normStep(st)) != dump(normStep(want)) {
			h.Fatalf("trace step %d = %s, want %s", i, dump(normStep(st)), dump(normStep(want)))
		}
	}
	// The other execution's ring is its own.
	if got := indexes(h.trace(other.ID)); !slices.Equal(got, []int64{0}) {
		h.Fatalf("other execution's indexes = %v, want [0]", got)
	}
	// Commits without a trace step leave the ring alone.
	h.commit(exe, stead.Bundle{ProcessedEventID: "quiet"})
	if got := indexes(h.trace(exe.ID)); !slices.Equal(got, []int64{2, 3, 4}) {
		h.Fatalf("indexes after a commit without trace = %v", got)
	}
	if got := h.trace(h.id("missing")); len(got) != 0 {
		h.Fatalf("ReadTrace of a missing execution = %s, want empty", dump(got))
	}
}

func testAppendTrace(h *harness) {
	exe := h.newExe("e")
	h.commit(exe, stead.Bundle{Trace: step(0)})
	for n := 1; n <= 4; n++ {
		idx, err := h.s.AppendTrace(h.ctx, exe.ID, *step(n))
		if err != nil {
			h.Fatalf("AppendTrace %d: %v", n, err)
		}
		if idx != int64(n) {
			h.Fatalf("AppendTrace %d returned index %d, want %d", n, idx, n)
		}
	}
	h.commit(exe, stead.Bundle{Trace: step(5)})
	got := h.trace(exe.ID)
	if !slices.Equal(indexes(got), []int64{3, 4, 5}) {
		h.Fatalf("indexes = %v, want [3 4 5]", indexes(got))
	}
	if got[0].EventID != "ev-3" || got[2].EventID != "ev-5" {
		h.Fatalf("ring holds the wrong steps: %s", dump(got))
	}
	// AppendTrace is not a commit: the version does not move.
	if v := h.load(exe.ID).Version; v != 2 {
		h.Fatalf("Version %d after AppendTrace, want 2", v)
	}
}

// testTraceRoundTrip uses the backend's default cap (at least a few steps) and a minimal step.
func testTraceRoundTrip(h *harness) {
	exe := h.newExe("e")
	h.commit(exe, stead.Bundle{Trace: &stead.TraceStep{}})
	h.commit(exe, stead.Bundle{Trace: step(7)})
	got := h.trace(exe.ID)
	if len(got) != 2 {
		h.Fatalf("ReadTrace = %s, want 2 steps", dump(got))
	}
	if dump(normStep(got[0])) != dump(stead.TraceStep{Index: 0}) {
		h.Fatalf("empty step read back as %s", dump(got[0]))
	}
	want := *step(7)
	want.Index = 1
	if dump(normStep(got[1])) != dump(normStep(want)) {
		h.Fatalf("step read back as %s, want %s", dump(normStep(got[1])), dump(normStep(want)))
	}
}
