package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/steadhq/stead"
)

var outboxRules = []rule{
	{name: "order_and_sequence_numbers", run: testOutboxOrder},
	{name: "sequence_numbers_never_reused", run: testOutboxSeqsNeverReused},
	{name: "concurrent_commits_get_distinct_seqs", run: testOutboxConcurrentSeqs},
	{name: "ack_removes_exactly_the_acked", run: testOutboxAck},
	{name: "pending_limit", run: testOutboxPendingLimit},
	{name: "claims_are_exclusive", run: testOutboxClaimsExclusive},
	{name: "claims_come_back_after_lease_expiry", run: testOutboxLeaseExpiry},
	{name: "trace_context_round_trips", run: testOutboxTrace},
}

// testOutboxTrace holds a backend to keep the W3C trace context of emitted events byte for byte,
// through Commit and CommitBatch, and in what an execution record holds (its dead letter's event,
// the trace of its armed timers),
// so that the step an emit causes joins the emitting step's trace.
func testOutboxTrace(h *harness) {
	const tc = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01;congo=t61rcWkgMzE"
	one, two := h.newExe("traced-one"), h.newExe("traced-two")
	traced := stead.Event{ID: "traced", Kind: "Traced", Trace: tc}
	seqs := h.commit(one, stead.Bundle{Emits: []stead.Emit{{Target: two.ID, Event: traced}, emit(two.ID, "plain", "Plain")}})
	h.wantOutbox("after Commit", h.outbox(one.ID), []stead.OutboxEntry{
		{Seq: seqs[0], Source: one.ID, Target: two.ID, Event: traced},
		{Seq: seqs[1], Source: one.ID, Target: two.ID, Event: stead.Event{ID: "plain", Kind: "Plain"}},
	})

	two.Status = stead.StatusFailed
	two.DeadLetter = &stead.DeadLetter{Event: traced, Status: stead.StatusRunning, ActivePath: "main/waiting"}
	two.TimerTraces = map[string]string{"main/waiting": tc}
	res, err := h.s.CommitBatch(h.ctx, []stead.CommitItem{{Execution: two, Bundle: stead.Bundle{
		Emits: []stead.Emit{{Target: one.ID, Event: stead.Event{ID: "back", Kind: "Back", Trace: tc}}}}}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		h.Fatalf("CommitBatch: %v %+v", err, res)
	}
	h.wantOutbox("after CommitBatch", h.outbox(two.ID), []stead.OutboxEntry{
		{Seq: res[0].Seqs[0], Source: two.ID, Target: one.ID, Event: stead.Event{ID: "back", Kind: "Back", Trace: tc}},
	})
	got, err := h.s.Load(h.ctx, two.ID)
	if err != nil {
		h.Fatalf("Load: %v", err)
	}
	if got.DeadLetter == nil || got.DeadLetter.Event.Trace != tc {
		h.Fatalf("the dead letter came back as %+v, want its event's trace %q", got.DeadLetter, tc)
	}
	if got.TimerTraces["main/waiting"] != tc || len(got.TimerTraces) != 1 {
		h.Fatalf("the timer traces came back as %v, want main/waiting: %q", got.TimerTraces, tc)
	}
}

func emit(target, id, kind string) stead.Emit {
	return stead.Emit{Target: target, Event: stead.Event{ID: id, Kind: kind}}
}

// wantOutbox fails unless got is exactly want (normalised, in order).
func (h *harness) wantOutbox(what string, got, want []stead.OutboxEntry) {
	h.Helper()
	g, w := mapSlice(got, normOutbox), mapSlice(want, normOutbox)
	if len(g) == 0 && len(w) == 0 {
		return
	}
	if fmt.Sprint(dump(g)) != fmt.Sprint(dump(w)) {
		h.Fatalf("%s: outbox\n got %s\nwant %s", what, dump(g), dump(w))
	}
}

// testOutboxOrder follows the outbox contract: emits land in order with the seqs Commit returned,
// addressed as emitted, and a commit without emits enqueues nothing.
func testOutboxOrder(h *harness) {
	exe, other := h.newExe("sender"), h.newExe("other")
	if seqs := h.commit(other, stead.Bundle{}); len(seqs) != 0 {
		h.Fatalf("state-only commit returned %v", seqs)
	}
	b := h.fullBundle(exe.ID, "step")
	first := stead.Event{ID: "first", Kind: "First", Data: json.RawMessage(`{"z": 1, "a": [true, null]}`), CreatedAt: base.Add(1500 * time.Nanosecond)}
	b.Emits = []stead.Emit{
		{Target: exe.ID, Event: first},
		emit(other.ID, "second", "Second"),
		emit(exe.ID, "third", "Third"),
		emit("", "fourth", "Broadcast"), // no target
	}
	seqs := h.commit(exe, b)
	if !increasing(seqs) {
		h.Fatalf("Commit returned seqs %v, want them increasing in emit order", seqs)
	}
	want := []stead.OutboxEntry{
		{Seq: seqs[0], Source: exe.ID, Target: exe.ID, Event: first},
		{Seq: seqs[1], Source: exe.ID, Target: other.ID, Event: stead.Event{ID: "second", Kind: "Second"}},
		{Seq: seqs[2], Source: exe.ID, Target: exe.ID, Event: stead.Event{ID: "third", Kind: "Third"}},
		{Seq: seqs[3], Source: exe.ID, Target: "", Event: stead.Event{ID: "fourth", Kind: "Broadcast"}},
	}
	h.wantOutbox("pending from the sender", h.outbox(exe.ID), want)
	h.wantOutbox("pending from the other", h.outbox(other.ID), nil)
	h.wantOutbox("pending from everyone", h.outbox(""), want)

	// No emits, nothing enqueued, even with every other side effect.
	b = h.fullBundle(exe.ID, "quiet")
	b.Emits = nil
	if got := h.commit(exe, b); len(got) != 0 {
		h.Fatalf("commit without emits returned seqs %v", got)
	}
	h.wantOutbox("after a commit without emits", h.outbox(""), want)

	// A second sender's entries interleave by seq in the global view.
	later := h.commit(other, stead.Bundle{Emits: []stead.Emit{emit(exe.ID, "later", "Later")}})
	if len(later) != 1 || later[0] <= seqs[3] {
		h.Fatalf("a later commit got seq %v, want one above %d", later, seqs[3])
	}
	all := append(slices.Clone(want), stead.OutboxEntry{Seq: later[0], Source: other.ID, Target: exe.ID, Event: stead.Event{ID: "later", Kind: "Later"}})
	h.wantOutbox("pending from everyone after a second sender", h.outbox(""), all)
}

func testOutboxSeqsNeverReused(h *harness) {
	exe := h.newExe("e")
	var seen []int64
	for round := range 3 {
		seqs := h.commit(exe, stead.Bundle{Emits: []stead.Emit{
			emit(exe.ID, fmt.Sprintf("r%d-a", round), "A"), emit(exe.ID, fmt.Sprintf("r%d-b", round), "B"),
		}})
		if len(seen) > 0 && seqs[0] <= slices.Max(seen) {
			h.Fatalf("round %d: seqs %v after acking %v: a seq was reused or went backwards", round, seqs, seen)
		}
		seen = append(seen, seqs...)
		// Ack everything, including the newest row: the next seq must still move on.
		if err := h.s.AckOutbox(h.ctx, seqs); err != nil {
			h.Fatalf("AckOutbox: %v", err)
		}
		h.wantOutbox("after acking everything", h.outbox(""), nil)
	}
}

func testOutboxAck(h *harness) {
	exe := h.newExe("e")
	var emits []stead.Emit
	for i := range 6 {
		emits = append(emits, emit(exe.ID, fmt.Sprintf("ev-%d", i), "Tick"))
	}
	seqs := h.commit(exe, stead.Bundle{Emits: emits})
	remaining := func() []int64 { return seqsOf(h.outbox(exe.ID)) }

	if err := h.s.AckOutbox(h.ctx, []int64{seqs[1]}); err != nil {
		h.Fatalf("AckOutbox: %v", err)
	}
	if got, want := remaining(), []int64{seqs[0], seqs[2], seqs[3], seqs[4], seqs[5]}; !slices.Equal(got, want) {
		h.Fatalf("after acking one: %v, want %v", got, want)
	}
	// Batched, with an unknown and an already acked seq among them: both are ignored.
	if err := h.s.AckOutbox(h.ctx, []int64{seqs[4], seqs[1], seqs[5] + 1_000_000, seqs[0]}); err != nil {
		h.Fatalf("batched AckOutbox: %v", err)
	}
	if got, want := remaining(), []int64{seqs[2], seqs[3], seqs[5]}; !slices.Equal(got, want) {
		h.Fatalf("after a batched ack: %v, want %v", got, want)
	}
	if err := h.s.AckOutbox(h.ctx, nil); err != nil {
		h.Fatalf("AckOutbox(nil): %v", err)
	}
	// Acking a claimed row removes it too.
	claimed, err := h.s.ClaimOutbox(h.ctx, base, time.Minute, 1)
	if err != nil || len(claimed) != 1 || claimed[0].Seq != seqs[2] {
		h.Fatalf("ClaimOutbox = %s, %v; want seq %d", dump(claimed), err, seqs[2])
	}
	if err := h.s.AckOutbox(h.ctx, []int64{seqs[2], seqs[3], seqs[5]}); err != nil {
		h.Fatalf("AckOutbox: %v", err)
	}
	if got := remaining(); len(got) != 0 {
		h.Fatalf("after acking the rest: %v left", got)
	}
	claimed, err = h.s.ClaimOutbox(h.ctx, farFuture, time.Minute, 10)
	if err != nil || len(claimed) != 0 {
		h.Fatalf("ClaimOutbox after acking everything = %s, %v", dump(claimed), err)
	}
}

func testOutboxPendingLimit(h *harness) {
	a, b := h.newExe("a"), h.newExe("b")
	sa := h.commit(a, stead.Bundle{Emits: []stead.Emit{emit("", "a1", "K"), emit("", "a2", "K"), emit("", "a3", "K")}})
	sb := h.commit(b, stead.Bundle{Emits: []stead.Emit{emit("", "b1", "K")}})
	for _, c := range []struct {
		source string
		limit  int
		want   []int64
	}{
		{a.ID, 2, sa[:2]},
		{a.ID, 3, sa},
		{a.ID, 100, sa},
		{b.ID, 100, sb},
		{"", 4, append(slices.Clone(sa), sb...)},
		{"", 1, sa[:1]},
		{h.id("nobody"), 10, nil},
	} {
		es, err := h.s.PendingOutbox(h.ctx, c.source, c.limit)
		if err != nil {
			h.Fatalf("PendingOutbox(%q, %d): %v", c.source, c.limit, err)
		}
		if got := seqsOf(es); !slices.Equal(got, c.want) && len(got)+len(c.want) > 0 {
			h.Fatalf("PendingOutbox(%q, %d) = %v, want %v", c.source, c.limit, got, c.want)
		}
	}
}

// seedOutbox commits n emits spread over four executions and returns their seqs in order.
func (h *harness) seedOutbox(n int) []int64 {
	var all []int64
	for e := range 4 {
		exe := h.newExe(fmt.Sprintf("sender-%d", e))
		var emits []stead.Emit
		for i := range n / 4 {
			emits = append(emits, emit(h.id("target"), fmt.Sprintf("e%d-%d", e, i), "Tick"))
		}
		all = append(all, h.commit(exe, stead.Bundle{Emits: emits})...)
	}
	return all
}

// claimAll has many goroutines claim in small batches at the same instant until nothing is left
// (or, for a store that hands rows out again, until twice the n rows were handed out), and returns
// every seq handed out, duplicates included.
func claimAll[E any](h *harness, claim func(now time.Time, lease time.Duration, limit int) ([]E, error), seq func(E) int64, now time.Time, n int) []int64 {
	h.Helper()
	const claimers = 8
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		got  []int64
		errs []error
	)
	for range claimers {
		wg.Go(func() {
			for {
				batch, err := claim(now, time.Minute, 7)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				for _, e := range batch {
					got = append(got, seq(e))
				}
				enough := len(got) > 2*n
				mu.Unlock()
				if err != nil || len(batch) == 0 || enough {
					return
				}
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		h.Fatalf("concurrent claims failed: %v", errs)
	}
	return got
}

// wantSameSet fails unless got holds every seq of want exactly once and nothing else.
func (h *harness) wantSameSet(what string, got, want []int64) {
	h.Helper()
	g := slices.Sorted(slices.Values(got))
	if !slices.Equal(g, want) {
		dups := 0
		for i := 1; i < len(g); i++ {
			if g[i] == g[i-1] {
				dups++
			}
		}
		h.Fatalf("%s: handed out %d seqs (%d duplicates), want each of %d exactly once", what, len(g), dups, len(want))
	}
}

func testOutboxClaimsExclusive(h *harness) {
	seqs := h.seedOutbox(200)
	claim := func(now time.Time, lease time.Duration, limit int) ([]stead.OutboxEntry, error) {
		return h.s.ClaimOutbox(h.ctx, now, lease, limit)
	}
	got := claimAll(h, claim, func(e stead.OutboxEntry) int64 { return e.Seq }, base, len(seqs))
	h.wantSameSet("concurrent ClaimOutbox", got, seqs)
	// Claimed rows stay pending (for inspection) until acked.
	if n := len(h.outbox("")); n != len(seqs) {
		h.Fatalf("PendingOutbox shows %d rows while claimed, want %d", n, len(seqs))
	}
}

func testOutboxLeaseExpiry(h *harness) {
	seqs := h.seedOutbox(20)
	const lease = 30 * time.Second
	claim := func(now time.Time, limit int) []stead.OutboxEntry {
		h.Helper()
		es, err := h.s.ClaimOutbox(h.ctx, now, lease, limit)
		if err != nil {
			h.Fatalf("ClaimOutbox(%v): %v", now, err)
		}
		return es
	}
	first := claim(base, 5)
	if got := seqsOf(first); !slices.Equal(got, seqs[:5]) {
		h.Fatalf("first claim = %v, want the oldest five %v", got, seqs[:5])
	}
	for _, e := range first {
		if e.Target != h.id("target") || e.Event.Kind != "Tick" || e.Source == "" {
			h.Fatalf("claimed entry lacks its fields: %s", dump(e))
		}
	}
	// Later, another relay gets the next rows, never the leased ones.
	second := claim(base.Add(lease/2), 100)
	if got := seqsOf(second); !slices.Equal(got, seqs[5:]) {
		h.Fatalf("claim under live leases = %v, want %v", got, seqs[5:])
	}
	if got := claim(base.Add(lease-time.Microsecond), 100); len(got) != 0 {
		h.Fatalf("claim just before the first lease ends = %v, want nothing", seqsOf(got))
	}
	// At the end of the first lease its rows are claimable again (a lease holds while its end is
	// after now); the second batch is still leased.
	if got := seqsOf(claim(base.Add(lease), 100)); !slices.Equal(got, seqs[:5]) {
		h.Fatalf("claim when the first lease ends = %v, want %v", got, seqs[:5])
	}
	// Acked rows never come back; the rest do once every lease has run out.
	if err := h.s.AckOutbox(h.ctx, seqs[:10]); err != nil {
		h.Fatalf("AckOutbox: %v", err)
	}
	if got := seqsOf(claim(base.Add(10*lease), 100)); !slices.Equal(got, seqs[10:]) {
		h.Fatalf("claim after every lease expired = %v, want the unacked %v", got, seqs[10:])
	}
}

// testOutboxConcurrentSeqs commits emits from many goroutines at once, each on its own execution:
// every seq is distinct, each commit's seqs increase in emit order, and the outbox holds exactly
// the returned seqs.
func testOutboxConcurrentSeqs(h *harness) {
	const writers, commits = 8, 5
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		all  []int64
		errs []error
	)
	for w := range writers {
		exe := h.newExe(fmt.Sprintf("writer-%d", w))
		wg.Go(func() {
			for c := range commits {
				b := stead.Bundle{Emits: []stead.Emit{
					emit(exe.ID, fmt.Sprintf("c%d-a", c), "A"), emit("", fmt.Sprintf("c%d-b", c), "B"), emit(exe.ID, fmt.Sprintf("c%d-c", c), "C"),
				}}
				c, err := h.s.Commit(h.ctx, exe, b)
				seqs := c.Seqs
				exe.Version = c.Version
				mu.Lock()
				switch {
				case err != nil:
					errs = append(errs, err)
				case len(seqs) != 3 || !increasing(seqs):
					errs = append(errs, fmt.Errorf("%s commit %d: seqs %v, want 3 increasing", exe.ID, c, seqs))
				default:
					all = append(all, seqs...)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		h.Fatalf("concurrent commits: %v", errs)
	}
	slices.Sort(all)
	if len(slices.Compact(slices.Clone(all))) != len(all) {
		h.Fatalf("concurrent commits were handed the same seq twice: %v", all)
	}
	if got := seqsOf(h.outbox("")); !slices.Equal(got, all) {
		h.Fatalf("outbox holds seqs %v, want the %d returned ones", got, len(all))
	}
}
