package storetest

import (
	"fmt"
	"reflect"
	"time"

	"github.com/steadhq/stead"
)

var timerRules = []rule{
	{name: "schedule_rearm_cancel", run: testTimerScheduleRearmCancel},
	{name: "fire_times_keep_microseconds", run: testTimerMicroseconds},
	{name: "due_order_and_limit", run: testDueOrderAndLimit},
	{name: "delete_only_if_fire_time_matches", run: testDeleteTimer},
}

func schedule(path string, at time.Time) stead.TimerOp {
	return stead.TimerOp{Action: stead.TimerSchedule, Path: path, FireAt: at}
}

func cancelTimer(path string) stead.TimerOp {
	return stead.TimerOp{Action: stead.TimerCancel, Path: path}
}

func (h *harness) wantTimers(what string, got []stead.Timer, want ...stead.Timer) {
	h.Helper()
	g, w := mapSlice(got, normTimer), mapSlice(want, normTimer)
	if len(g) == 0 && len(w) == 0 {
		return
	}
	if !reflect.DeepEqual(g, w) {
		h.Fatalf("%s: timers\n got %s\nwant %s", what, dump(g), dump(w))
	}
}

func testTimerScheduleRearmCancel(h *harness) {
	exe := h.newExe("e")
	t1, t2, t3 := base.Add(time.Second), base.Add(2*time.Second), base.Add(3*time.Second)
	h.commit(exe, stead.Bundle{Timers: []stead.TimerOp{schedule("b/path", t2), schedule("a/path", t1)}})
	h.wantTimers("after scheduling two", h.timers(exe.ID),
		stead.Timer{ExecutionID: exe.ID, Path: "a/path", FireAt: t1},
		stead.Timer{ExecutionID: exe.ID, Path: "b/path", FireAt: t2})

	// Re-arming replaces the fire time: still one timer for the path.
	h.commit(exe, stead.Bundle{Timers: []stead.TimerOp{schedule("a/path", t3)}})
	h.wantTimers("after re-arming a/path", h.timers(exe.ID),
		stead.Timer{ExecutionID: exe.ID, Path: "a/path", FireAt: t3},
		stead.Timer{ExecutionID: exe.ID, Path: "b/path", FireAt: t2})
	h.wantTimers("due at t1 after re-arming", h.due(t1, 10))

	// Cancel removes whatever the fire time; cancelling an unarmed path is a no-op.
	h.commit(exe, stead.Bundle{Timers: []stead.TimerOp{cancelTimer("b/path"), cancelTimer("never/armed")}})
	h.wantTimers("after cancelling b/path", h.timers(exe.ID), stead.Timer{ExecutionID: exe.ID, Path: "a/path", FireAt: t3})

	// Ops apply in order: schedule then cancel leaves nothing, cancel then schedule leaves one.
	h.commit(exe, stead.Bundle{Timers: []stead.TimerOp{
		schedule("c/path", t1), cancelTimer("c/path"),
		cancelTimer("d/path"), schedule("d/path", t2),
		schedule("e/path", t1), schedule("e/path", t2),
	}})
	h.wantTimers("after ordered ops", h.timers(exe.ID),
		stead.Timer{ExecutionID: exe.ID, Path: "a/path", FireAt: t3},
		stead.Timer{ExecutionID: exe.ID, Path: "d/path", FireAt: t2},
		stead.Timer{ExecutionID: exe.ID, Path: "e/path", FireAt: t2})

	// Timers belong to their execution: another one's ops do not touch these.
	other := h.newExe("other")
	h.commit(other, stead.Bundle{Timers: []stead.TimerOp{schedule("a/path", t1), cancelTimer("d/path")}})
	if n := len(h.timers(exe.ID)); n != 3 {
		h.Fatalf("another execution's timer ops changed this one's timers: %d left, want 3", n)
	}
	h.wantTimers("other's timers", h.timers(other.ID), stead.Timer{ExecutionID: other.ID, Path: "a/path", FireAt: t1})
	h.wantTimers("timers of a missing execution", h.timers(h.id("missing")))
}

func testTimerMicroseconds(h *harness) {
	exe := h.newExe("e")
	zone := time.FixedZone("UTC+5", 5*3600)
	at := base.Add(123456789 * time.Nanosecond).In(zone) // 0.123456789s past base
	h.commit(exe, stead.Bundle{Timers: []stead.TimerOp{schedule("p", at)}})
	micros := at.UTC().Truncate(time.Microsecond)
	got := h.timers(exe.ID)
	if len(got) != 1 || !got[0].FireAt.Equal(micros) {
		h.Fatalf("Timers = %s, want one firing at %v (microsecond precision)", dump(got), micros)
	}
	h.wantTimers("due just before", h.due(micros.Add(-time.Microsecond), 10))
	due := h.due(micros, 10) // due when fire time <= now
	if len(due) != 1 || !due[0].FireAt.Equal(micros) {
		h.Fatalf("DueTimers at the fire time = %s, want the timer", dump(due))
	}
	ok, err := h.s.DeleteTimer(h.ctx, due[0])
	if err != nil || !ok {
		h.Fatalf("DeleteTimer(the timer DueTimers returned) = %v, %v; want true", ok, err)
	}
	h.wantTimers("after delete", h.timers(exe.ID))
}

func testDueOrderAndLimit(h *harness) {
	a, b := h.newExe("a"), h.newExe("b")
	t1, t2, t3 := base.Add(time.Second), base.Add(2*time.Second), base.Add(3*time.Second)
	h.commit(b, stead.Bundle{Timers: []stead.TimerOp{schedule("p", t1), schedule("a", t3), schedule("z", t2)}})
	h.commit(a, stead.Bundle{Timers: []stead.TimerOp{schedule("q", t1), schedule("p", t2), schedule("far", farFuture.Add(-time.Hour))}})
	want := []stead.Timer{
		{ExecutionID: a.ID, Path: "q", FireAt: t1}, // ties: by execution id, then path
		{ExecutionID: b.ID, Path: "p", FireAt: t1},
		{ExecutionID: a.ID, Path: "p", FireAt: t2},
		{ExecutionID: b.ID, Path: "z", FireAt: t2},
		{ExecutionID: b.ID, Path: "a", FireAt: t3},
	}
	h.wantTimers("due at t2", h.due(t2, 100), want[:4]...)
	h.wantTimers("due at t3", h.due(t3, 100), want...)
	for limit := 1; limit <= 5; limit++ {
		h.wantTimers(fmt.Sprintf("due at t3 limit %d", limit), h.due(t3, limit), want[:limit]...)
	}
	h.wantTimers("due before any", h.due(t1.Add(-time.Microsecond), 100))
	// Timers stay until deleted: reading them does not consume them.
	h.wantTimers("due at t2 again", h.due(t2, 100), want[:4]...)
}

func testDeleteTimer(h *harness) {
	exe := h.newExe("e")
	t1, t2 := base.Add(time.Second), base.Add(5*time.Second)
	h.commit(exe, stead.Bundle{Timers: []stead.TimerOp{schedule("p", t1), schedule("other", t1)}})
	due := h.due(t1, 10)
	if len(due) != 2 {
		h.Fatalf("DueTimers = %s, want 2", dump(due))
	}
	fired := due[1] // path "p" sorts after "other"
	if fired.Path != "p" {
		h.Fatalf("DueTimers order: %s", dump(due))
	}
	// The model re-arms the state while the sweeper holds the old reading.
	h.commit(exe, stead.Bundle{Timers: []stead.TimerOp{schedule("p", t2)}})
	ok, err := h.s.DeleteTimer(h.ctx, fired)
	if err != nil || ok {
		h.Fatalf("DeleteTimer with a stale fire time = %v, %v; want false, nil", ok, err)
	}
	h.wantTimers("after a stale delete", h.timers(exe.ID),
		stead.Timer{ExecutionID: exe.ID, Path: "other", FireAt: t1},
		stead.Timer{ExecutionID: exe.ID, Path: "p", FireAt: t2})

	cur := h.timers(exe.ID)
	for _, tm := range cur {
		ok, err := h.s.DeleteTimer(h.ctx, tm)
		if err != nil || !ok {
			h.Fatalf("DeleteTimer(%s) = %v, %v; want true", dump(tm), ok, err)
		}
		ok, err = h.s.DeleteTimer(h.ctx, tm)
		if err != nil || ok {
			h.Fatalf("second DeleteTimer(%s) = %v, %v; want false", dump(tm), ok, err)
		}
	}
	h.wantTimers("after deleting both", h.timers(exe.ID))
	ok, err = h.s.DeleteTimer(h.ctx, stead.Timer{ExecutionID: h.id("missing"), Path: "p", FireAt: t1})
	if err != nil || ok {
		h.Fatalf("DeleteTimer of an unknown timer = %v, %v; want false, nil", ok, err)
	}
}
