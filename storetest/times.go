package storetest

import (
	"time"

	"github.com/steadhq/stead"
)

var timeRules = []rule{
	{name: "every_read_path_returns_utc_microseconds", run: testReadPathsUTCMicros},
	{name: "lease_ends_exactly_at_now_plus_lease", run: testLeaseEndsExactly},
}

// testReadPathsUTCMicros commits times with nanoseconds, in a zone west of UTC, into every field
// that holds one, and checks that every read path returns exactly the instant truncated to
// microseconds, in UTC: a backend that keeps milliseconds, or more than microseconds, or hands
// back its local zone, fails here.
func testReadPathsUTCMicros(h *harness) {
	zone := time.FixedZone("UTC-5", -5*3600)
	at := func(ns int) time.Time { return base.Add(time.Duration(ns)).In(zone) }
	want := func(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
	exact := func(what string, got, t time.Time) {
		h.Helper()
		if got != want(t) || got.Location() != time.UTC {
			h.Fatalf("%s = %s (%s), want %s in UTC", what, got.Format(time.RFC3339Nano), got.Location(), want(t).Format(time.RFC3339Nano))
		}
	}
	exe := h.newExe("e")
	exe.CreatedAt, exe.UpdatedAt, exe.FinishedAt = at(1_001_001), at(2_002_999), at(3_000_001)
	exe.Status = stead.StatusDone
	exe.Deferred[0].CreatedAt = at(4_000_500)
	exe.Timers = map[string]time.Time{"t/a": at(5_000_999)}
	exe.DeadLetter.Event.CreatedAt = at(9_000_777)
	exe.DeadLetter.Timers = map[string]time.Time{"t/b": at(9_500_001)}
	emitAt, fireAt, traceAt := at(6_123_456), at(7_000_001), at(8_999_999)
	h.commit(exe, stead.Bundle{
		Emits:  []stead.Emit{{Target: exe.ID, Event: stead.Event{ID: "ev", Kind: "K", CreatedAt: emitAt}}},
		Timers: []stead.TimerOp{{Action: stead.TimerSchedule, Path: "t/a", FireAt: fireAt}},
		Trace:  &stead.TraceStep{EventKind: "K", At: traceAt},
	})
	check := func(how string, e *stead.Execution) {
		h.Helper()
		exact(how+" CreatedAt", e.CreatedAt, exe.CreatedAt)
		exact(how+" UpdatedAt", e.UpdatedAt, exe.UpdatedAt)
		exact(how+" FinishedAt", e.FinishedAt, exe.FinishedAt)
		exact(how+" deferred CreatedAt", e.Deferred[0].CreatedAt, exe.Deferred[0].CreatedAt)
		exact(how+" Timers[t/a]", e.Timers["t/a"], exe.Timers["t/a"])
		exact(how+" dead letter event CreatedAt", e.DeadLetter.Event.CreatedAt, exe.DeadLetter.Event.CreatedAt)
		exact(how+" dead letter Timers[t/b]", e.DeadLetter.Timers["t/b"], exe.DeadLetter.Timers["t/b"])
	}
	check("Load", h.load(exe.ID))
	e, _, err := h.s.LoadForEvent(h.ctx, exe.ID, "x")
	if err != nil {
		h.Fatalf("LoadForEvent: %v", err)
	}
	check("LoadForEvent", e)
	ls, err := h.s.LoadForEvents(h.ctx, []stead.EventRef{{ExecutionID: exe.ID, EventID: "x"}})
	if err != nil || len(ls) != 1 || ls[0].Execution == nil {
		h.Fatalf("LoadForEvents = %v, %v", ls, err)
	}
	check("LoadForEvents", ls[0].Execution)
	p, err := h.s.List(h.ctx, stead.ListFilter{DefinitionID: exe.DefinitionID})
	if err != nil || len(p.Items) != 1 {
		h.Fatalf("List = %+v, %v", p, err)
	}
	exact("List CreatedAt", p.Items[0].CreatedAt, exe.CreatedAt)
	exact("List UpdatedAt", p.Items[0].UpdatedAt, exe.UpdatedAt)
	exact("List FinishedAt", p.Items[0].FinishedAt, exe.FinishedAt)
	ts := h.timers(exe.ID)
	if len(ts) != 1 {
		h.Fatalf("Timers = %s", dump(ts))
	}
	exact("Timers FireAt", ts[0].FireAt, fireAt)
	due := h.due(farFuture, 10)
	if len(due) != 1 {
		h.Fatalf("DueTimers = %s", dump(due))
	}
	exact("DueTimers FireAt", due[0].FireAt, fireAt)
	tr := h.trace(exe.ID)
	if len(tr) != 1 {
		h.Fatalf("ReadTrace = %s", dump(tr))
	}
	exact("ReadTrace At", tr[0].At, traceAt)
	ob := h.outbox(exe.ID)
	if len(ob) != 1 {
		h.Fatalf("PendingOutbox = %s", dump(ob))
	}
	exact("PendingOutbox event CreatedAt", ob[0].Event.CreatedAt, emitAt)
	claimed, err := h.s.ClaimOutbox(h.ctx, base, time.Minute, 10)
	if err != nil || len(claimed) != 1 {
		h.Fatalf("ClaimOutbox = %s, %v", dump(claimed), err)
	}
	exact("ClaimOutbox event CreatedAt", claimed[0].Event.CreatedAt, emitAt)
	// A timer read back deletes with the fire time it was read with.
	if ok, err := h.s.DeleteTimer(h.ctx, ts[0]); err != nil || !ok {
		h.Fatalf("DeleteTimer of the timer as read = %v, %v", ok, err)
	}
}

// testLeaseEndsExactly claims with a now carrying nanoseconds: the lease holds at every instant
// before now+lease (at microsecond precision) and ends exactly then, on every backend.
func testLeaseEndsExactly(h *harness) {
	exe := h.newExe("e")
	h.commit(exe, stead.Bundle{Emits: []stead.Emit{emit(exe.ID, "ev", "K")}})
	now := base.Add(500 * time.Nanosecond)
	if es, err := h.s.ClaimOutbox(h.ctx, now, time.Second, 10); err != nil || len(es) != 1 {
		h.Fatalf("ClaimOutbox = %s, %v", dump(es), err)
	}
	end := base.Add(time.Second) // now truncated to microseconds, plus the lease
	if es, err := h.s.ClaimOutbox(h.ctx, end.Add(-time.Microsecond), time.Second, 10); err != nil || len(es) != 0 {
		h.Fatalf("claim one microsecond before the lease ends = %s, %v; want nothing", dump(es), err)
	}
	if es, err := h.s.ClaimOutbox(h.ctx, end, time.Second, 10); err != nil || len(es) != 1 {
		h.Fatalf("claim when the lease ends = %s, %v; want the entry back", dump(es), err)
	}
}
