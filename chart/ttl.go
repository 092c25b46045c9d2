package chart

import (
	"encoding/json"
	"time"

	"github.com/steadhq/stead"
)

func isTTLTimeout(ev stead.Event) bool {
	var d timeoutData
	return json.Unmarshal(ev.Data, &d) == nil && d.Path == TTLTimerPath
}

// armTTL arms the time to live of a whole machine (not of a region child, which lives as long
// as its parent's state) when its definition has one and it is not armed yet.
func (s *stepper) armTTL() {
	if s.e.ttl <= 0 || s.in.RootPath != "" {
		return
	}
	if _, armed := s.out.Timers[TTLTimerPath]; armed {
		return
	}
	at := s.now.Add(s.e.ttl).Truncate(time.Microsecond)
	s.timers()[TTLTimerPath] = at
	s.b.Timers = append(s.b.Timers, stead.TimerOp{Action: stead.TimerSchedule, Path: TTLTimerPath, FireAt: at})
}

func (s *stepper) disarmTTL() {
	if _, armed := s.out.Timers[TTLTimerPath]; armed {
		s.disarmTimer(TTLTimerPath)
	}
}

// rearmTTL pushes out's deadline back to TTL after now, when it is still armed.
func (e *Engine) rearmTTL(out *stead.Execution, b *stead.Bundle, now time.Time) {
	if _, armed := out.Timers[TTLTimerPath]; !armed || out.Status.Finished() {
		return
	}
	at := now.Add(e.ttl).Truncate(time.Microsecond)
	if out.Timers[TTLTimerPath].Equal(at) {
		return
	}
	timers := make(map[string]time.Time, len(out.Timers))
	for k, v := range out.Timers {
		timers[k] = v
	}
	timers[TTLTimerPath] = at
	out.Timers = timers // a fresh map: out may share its input's
	b.Timers = append(b.Timers, stead.TimerOp{Action: stead.TimerSchedule, Path: TTLTimerPath, FireAt: at})
}

// expire ends the execution because its time to live ran out (a fire of the deadline armed
// last; an earlier arming's is ignored).
func (s *stepper) expire(fireAt time.Time) {
	armed, ok := s.out.Timers[TTLTimerPath]
	if !ok || s.in.Status != stead.StatusRunning && s.in.Status != stead.StatusPending {
		return
	}
	if !fireAt.IsZero() && absDuration(armed.Sub(fireAt)) >= time.Microsecond {
		return
	}
	s.dropTimer(TTLTimerPath) // consumed: its row was deleted when it fired
	s.exitForCancel()
	s.disarm()
	s.out.Status, s.out.Outcome, s.out.FinishedAt = stead.StatusDone, OutcomeExpired, s.now
	s.out.Deferred = nil
	s.stopped = true
	s.notifyParent(OutcomeExpired, "")
}
