package storetest

import (
	"context"
	"encoding/base64"
	"math"
	"strings"
	"time"

	"github.com/steadhq/stead"
)

var badInputRules = []rule{
	{name: "refused_with_err_invalid", run: testBadInput},
}

// badCall is one call with bad input.
type badCall struct {
	name string
	call func(ctx context.Context, s *stead.Store) error
}

func (h *harness) badCalls(stored *stead.Execution) []badCall {
	id := stored.ID
	long := strings.Repeat("x", stead.MaxIDLen+1)
	withID := func(bad string) *stead.Execution {
		e := h.newExe("x")
		e.ID = bad
		return e
	}
	commit := func(e *stead.Execution, b stead.Bundle) func(context.Context, *stead.Store) error {
		return func(ctx context.Context, s *stead.Store) error { _, err := s.Commit(ctx, e, b); return err }
	}
	list := func(f stead.ListFilter) func(context.Context, *stead.Store) error {
		return func(ctx context.Context, s *stead.Store) error { _, err := s.List(ctx, f); return err }
	}
	// A cursor of the right shape for another filter, a truncated one and plain garbage.
	foreign := base64.RawURLEncoding.EncodeToString(append([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0}, id...))
	var calls []badCall
	add := func(name string, call func(context.Context, *stead.Store) error) {
		calls = append(calls, badCall{name, call})
	}
	for name, bad := range map[string]string{"empty": "", "NUL": "a\x00b", "invalid UTF-8": "a\xffb", "too long": long} {
		add("Load id "+name, func(ctx context.Context, s *stead.Store) error { _, err := s.Load(ctx, bad); return err })
		add("LoadForEvent id "+name, func(ctx context.Context, s *stead.Store) error {
			_, _, err := s.LoadForEvent(ctx, bad, "ev")
			return err
		})
		add("LoadForEvent event "+name, func(ctx context.Context, s *stead.Store) error {
			_, _, err := s.LoadForEvent(ctx, id, bad)
			return err
		})
		add("LoadForEvents id "+name, func(ctx context.Context, s *stead.Store) error {
			_, err := s.LoadForEvents(ctx, []stead.EventRef{{ExecutionID: id, EventID: "ev"}, {ExecutionID: bad, EventID: "ev"}})
			return err
		})
		add("IsProcessed id "+name, func(ctx context.Context, s *stead.Store) error { _, err := s.IsProcessed(ctx, bad, "ev"); return err })
		add("IsProcessed event "+name, func(ctx context.Context, s *stead.Store) error { _, err := s.IsProcessed(ctx, id, bad); return err })
		add("ReadTrace id "+name, func(ctx context.Context, s *stead.Store) error { _, err := s.ReadTrace(ctx, bad); return err })
		add("Timers id "+name, func(ctx context.Context, s *stead.Store) error { _, err := s.Timers(ctx, bad); return err })
		add("Commit id "+name, commit(withID(bad), stead.Bundle{}))
		add("Commit id "+name+" with side effects", commit(withID(bad), h.fullBundle(id, "bad")))
		add("AppendTrace id "+name, func(ctx context.Context, s *stead.Store) error {
			_, err := s.AppendTrace(ctx, bad, stead.TraceStep{EventKind: "K"})
			return err
		})
		add("Purge id "+name, func(ctx context.Context, s *stead.Store) error { _, err := s.Purge(ctx, bad, 1); return err })
		add("DeleteTimer id "+name, func(ctx context.Context, s *stead.Store) error {
			_, err := s.DeleteTimer(ctx, stead.Timer{ExecutionID: bad, Path: "P", FireAt: base})
			return err
		})
		add("DeleteTimer path "+name, func(ctx context.Context, s *stead.Store) error {
			_, err := s.DeleteTimer(ctx, stead.Timer{ExecutionID: id, Path: bad, FireAt: base})
			return err
		})
		if name != "empty" { // an empty source or parent means every one
			add("PendingOutbox source "+name, func(ctx context.Context, s *stead.Store) error { _, err := s.PendingOutbox(ctx, bad, 10); return err })
			add("PendingSpawns parent "+name, func(ctx context.Context, s *stead.Store) error { _, err := s.PendingSpawns(ctx, bad, 10); return err })
			add("List definition "+name, list(stead.ListFilter{DefinitionID: bad}))
			add("List id prefix "+name, list(stead.ListFilter{IDPrefix: bad}))
		}
	}
	add("Commit nil execution", func(ctx context.Context, s *stead.Store) error {
		_, err := s.Commit(ctx, nil, stead.Bundle{})
		return err
	})
	oversized := stored.Clone()
	oversized.Context = bigObject(stead.MaxPayload + 1)
	add("Commit oversized context", commit(oversized, stead.Bundle{}))
	negative := stored.Clone()
	negative.Version = -1
	add("Commit negative version", commit(negative, stead.Bundle{}))
	add("AppendTrace invalid step", func(ctx context.Context, s *stead.Store) error {
		_, err := s.AppendTrace(ctx, id, stead.TraceStep{Context: []byte(`{"a":`)})
		return err
	})
	add("AppendTrace oversized step", func(ctx context.Context, s *stead.Store) error {
		_, err := s.AppendTrace(ctx, id, stead.TraceStep{Context: bigObject(stead.MaxPayload + 1)})
		return err
	})
	add("LoadForEvents over MaxBatch", func(ctx context.Context, s *stead.Store) error {
		refs := make([]stead.EventRef, stead.MaxBatch+1)
		for i := range refs {
			refs[i] = stead.EventRef{ExecutionID: id, EventID: "ev"}
		}
		_, err := s.LoadForEvents(ctx, refs)
		return err
	})
	add("CommitBatch over MaxBatch", func(ctx context.Context, s *stead.Store) error {
		items := make([]stead.CommitItem, stead.MaxBatch+1)
		for i := range items {
			items[i] = stead.CommitItem{Execution: h.newExe("batch-" + strings.Repeat("i", i%7) + string(rune('a'+i%26)))}
		}
		_, err := s.CommitBatch(ctx, items)
		return err
	})
	for _, limit := range []int{-1, math.MinInt, stead.MaxListLimit + 1, math.MaxInt} {
		add("List limit", list(stead.ListFilter{Limit: limit}))
		add("ClaimOutbox limit", func(ctx context.Context, s *stead.Store) error {
			_, err := s.ClaimOutbox(ctx, farFuture, time.Minute, limit)
			return err
		})
		add("ClaimSpawns limit", func(ctx context.Context, s *stead.Store) error {
			_, err := s.ClaimSpawns(ctx, farFuture, time.Minute, limit)
			return err
		})
		add("PendingOutbox limit", func(ctx context.Context, s *stead.Store) error { _, err := s.PendingOutbox(ctx, "", limit); return err })
		add("PendingSpawns limit", func(ctx context.Context, s *stead.Store) error { _, err := s.PendingSpawns(ctx, "", limit); return err })
		add("DueTimers limit", func(ctx context.Context, s *stead.Store) error {
			_, err := s.DueTimers(ctx, farFuture, limit)
			return err
		})
	}
	for _, lease := range []time.Duration{0, -time.Second} {
		add("ClaimOutbox lease", func(ctx context.Context, s *stead.Store) error {
			_, err := s.ClaimOutbox(ctx, farFuture, lease, 10)
			return err
		})
		add("ClaimSpawns lease", func(ctx context.Context, s *stead.Store) error {
			_, err := s.ClaimSpawns(ctx, farFuture, lease, 10)
			return err
		})
	}
	for _, cursor := range []string{"not a cursor!", "bm90IGEgY3Vyc29y", foreign, "AQ", "%%%", strings.Repeat("A", 4096)} {
		add("List forged cursor", list(stead.ListFilter{Cursor: cursor}))
	}
	for name, r := range map[string]stead.TimeRange{
		"empty":                                {From: base, Before: base},
		"reversed":                             {From: base.Add(time.Hour), Before: base},
		"empty once truncated to microseconds": {From: base.Add(100 * time.Nanosecond), Before: base.Add(900 * time.Nanosecond)},
		"before year 1":                        {Before: time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC)},
		"from year 10000":                      {From: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		add("List created window "+name, list(stead.ListFilter{Created: r}))
		add("List updated window "+name, list(stead.ListFilter{Updated: r}))
		add("List finished window "+name, list(stead.ListFilter{Finished: r}))
	}
	add("Purge negative version", func(ctx context.Context, s *stead.Store) error { _, err := s.Purge(ctx, id, -1); return err })
	for _, seqs := range [][]int64{{0}, {1, -3}, make([]int64, stead.MaxBatch+1)} {
		add("AckOutbox bad seqs", func(ctx context.Context, s *stead.Store) error { return s.AckOutbox(ctx, seqs) })
		add("AckSpawns bad seqs", func(ctx context.Context, s *stead.Store) error { return s.AckSpawns(ctx, seqs) })
	}
	for name, tr := range map[string]string{
		"oversized": strings.Repeat("0", stead.MaxTraceLen+1), "with a newline": "00-ab\n", "not ascii": "00-é",
	} {
		add("Commit emit trace "+name, commit(stored.Clone(), stead.Bundle{Emits: []stead.Emit{{Target: "t", Event: stead.Event{ID: "e", Kind: "K", Trace: tr}}}}))
		add("Commit spawn trace "+name, commit(stored.Clone(), stead.Bundle{Spawns: []stead.Spawn{{ChildID: "c", Trace: tr}}}))
	}
	add("ClaimOutbox lease above MaxLease", func(ctx context.Context, s *stead.Store) error {
		_, err := s.ClaimOutbox(ctx, base, stead.MaxLease+time.Second, 10)
		return err
	})
	// Times: every backend stores the years 1 to 9999 exactly, checked in UTC; a zero time is no
	// time where one is required.
	west := time.FixedZone("UTC-5", -5*3600)
	outOfRange := map[string]time.Time{
		"year 10000":                      time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		"year 300000":                     time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC),
		"year 17,941,134,906":             time.Date(17941134906, 1, 1, 0, 0, 0, 0, time.UTC),
		"9999-12-31 23:00 at -05:00":      time.Date(9999, 12, 31, 23, 0, 0, 0, west),
		"0001-01-01 01:00 at +05:00":      time.Date(1, 1, 1, 1, 0, 0, 0, time.FixedZone("UTC+5", 5*3600)),
		"a microsecond before the year 1": time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Microsecond),
	}
	for name, t := range outOfRange {
		created := stored.Clone()
		created.CreatedAt = t
		add("Commit created at "+name, commit(created, stead.Bundle{}))
		timer := stored.Clone()
		timer.Timers = map[string]time.Time{"p": t}
		add("Commit execution timer at "+name, commit(timer, stead.Bundle{}))
		add("Commit timer op at "+name, commit(stored.Clone(), stead.Bundle{Timers: []stead.TimerOp{{Action: stead.TimerSchedule, Path: "p", FireAt: t}}}))
		add("Commit emit created at "+name, commit(stored.Clone(), stead.Bundle{Emits: []stead.Emit{{Event: stead.Event{ID: "e", Kind: "K", CreatedAt: t}}}}))
		add("Commit trace at "+name, commit(stored.Clone(), stead.Bundle{Trace: &stead.TraceStep{At: t}}))
		add("ClaimOutbox now "+name, func(ctx context.Context, s *stead.Store) error {
			_, err := s.ClaimOutbox(ctx, t, time.Minute, 10)
			return err
		})
		add("ClaimSpawns now "+name, func(ctx context.Context, s *stead.Store) error {
			_, err := s.ClaimSpawns(ctx, t, time.Minute, 10)
			return err
		})
		add("DueTimers now "+name, func(ctx context.Context, s *stead.Store) error { _, err := s.DueTimers(ctx, t, 10); return err })
		add("DeleteTimer fire time "+name, func(ctx context.Context, s *stead.Store) error {
			_, err := s.DeleteTimer(ctx, stead.Timer{ExecutionID: id, Path: "timer/seed", FireAt: t})
			return err
		})
		add("AppendTrace at "+name, func(ctx context.Context, s *stead.Store) error {
			_, err := s.AppendTrace(ctx, id, stead.TraceStep{At: t})
			return err
		})
	}
	add("ClaimOutbox lease past the year 9999", func(ctx context.Context, s *stead.Store) error {
		_, err := s.ClaimOutbox(ctx, time.Date(9999, 12, 31, 23, 59, 0, 0, time.UTC), time.Hour, 10)
		return err
	})
	add("ClaimOutbox zero now", func(ctx context.Context, s *stead.Store) error {
		_, err := s.ClaimOutbox(ctx, time.Time{}, time.Minute, 10)
		return err
	})
	add("ClaimSpawns zero now", func(ctx context.Context, s *stead.Store) error {
		_, err := s.ClaimSpawns(ctx, time.Time{}, time.Minute, 10)
		return err
	})
	add("DueTimers zero now", func(ctx context.Context, s *stead.Store) error {
		_, err := s.DueTimers(ctx, time.Time{}, 10)
		return err
	})
	add("DeleteTimer zero fire time", func(ctx context.Context, s *stead.Store) error {
		_, err := s.DeleteTimer(ctx, stead.Timer{ExecutionID: id, Path: "timer/seed"})
		return err
	})
	add("List invalid status", list(stead.ListFilter{Statuses: []stead.Status{stead.StatusRunning, "zombie"}}))
	add("List empty status", list(stead.ListFilter{Statuses: []stead.Status{""}}))
	return calls
}

// testBadInput makes every call with bad input and checks that each is refused with ErrInvalid
// and that the store is exactly as before.
func testBadInput(h *harness) {
	stored := h.newExe("stored")
	h.commit(stored, h.fullBundle(stored.ID, "seed"))
	if _, err := h.s.ClaimSpawns(h.ctx, base, time.Minute, 1); err != nil {
		h.Fatalf("ClaimSpawns: %v", err)
	}
	ids := []string{stored.ID, h.id("x")}
	refs := []stead.EventRef{{ExecutionID: stored.ID, EventID: "seed-processed"}, {ExecutionID: stored.ID, EventID: "bad-processed"}}
	before := h.snap(ids, refs...)
	claimable := func(now time.Time) int {
		es, err := h.s.ClaimOutbox(h.ctx, now, time.Microsecond, stead.MaxListLimit)
		if err != nil {
			h.Fatalf("ClaimOutbox: %v", err)
		}
		return len(es)
	}
	wantClaimable := claimable(farFuture)
	for _, c := range h.badCalls(stored) {
		err := c.call(h.ctx, h.s)
		h.wantErr(c.name, err, stead.ErrInvalid)
	}
	h.unchanged("calls with bad input", before, ids, refs...)
	if got := claimable(farFuture.Add(time.Second)); got != wantClaimable {
		h.Fatalf("after calls with bad input %d outbox rows are claimable, want %d", got, wantClaimable)
	}
	if stored.Version != 1 {
		h.Fatalf("stored copy's Version moved to %d", stored.Version)
	}
}
