package chart

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/steadhq/stead"
)

// The invoke-counter keys a pending retry keeps: how many attempts failed, and the version and
// action index the first attempt's idempotency keys started from, so that every attempt gives
// its actions the same keys. Like RetryTimerPath they hold '@', which no state path does.
const (
	retryAttemptsKey = RetryTimerPath // the worker reads the count here for its log line
	retryVersionKey  = "@retry.version"
	retryIndexKey    = "@retry.index"
)

// delay is how long to wait after failed attempt n (1-based) before the next one.
func (r *Retry) delay(n int, executionID, eventID string) time.Duration {
	factor := r.Factor
	if factor == 0 {
		factor = 2
	}
	limit := MaxRetryDelay
	if r.Max > 0 && r.Max < limit {
		limit = r.Max
	}
	d := float64(r.Backoff) * math.Pow(factor, float64(n-1))
	if d > float64(limit) || math.IsInf(d, 0) || math.IsNaN(d) {
		d = float64(limit)
	}
	if r.Jitter > 0 {
		d -= d * r.Jitter * unitHash(executionID, eventID, n)
	}
	if d < float64(time.Microsecond) {
		d = float64(time.Microsecond) // a timer always lies after the step that armed it
	}
	return time.Duration(d)
}

// unitHash maps (execution, event, attempt) to [0, 1) deterministically.
func unitHash(executionID, eventID string, n int) float64 {
	h := fnv.New64a()
	h.Write([]byte(executionID))
	h.Write([]byte{0})
	h.Write([]byte(eventID))
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(n))
	h.Write(buf[:])
	return float64(h.Sum64()>>11) / (1 << 53)
}

// retryable reports whether the failure ae gets another attempt instead of its error handling.
func (s *stepper) retryable(ae *actionError) bool {
	return ae.retry != nil && !s.control && s.ev.Kind != KindCancel && s.attempt < ae.retry.Attempts
}

// keyRef is where a step's idempotency keys start: "<execution id>:<version>:<index>".
type keyRef struct {
	version int64
	index   int
}

// scheduleRetry discards what the step did and returns its input with the event kept at the
// head of Deferred, the attempt counted and the retry timer armed.
func (s *stepper) scheduleRetry(k keyRef) (*stead.Execution, stead.Bundle) {
	ae := s.retrying
	in := s.in
	out := *in
	out.UpdatedAt = s.now
	at := s.now.Add(ae.retry.delay(s.attempt, in.ID, s.ev.ID)).Truncate(time.Microsecond)
	out.Timers = maps.Clone(in.Timers)
	if out.Timers == nil {
		out.Timers = map[string]time.Time{}
	}
	out.Timers[RetryTimerPath] = at
	out.InvokeSeq = maps.Clone(in.InvokeSeq)
	if out.InvokeSeq == nil {
		out.InvokeSeq = map[string]int{}
	}
	out.InvokeSeq[retryAttemptsKey] = s.attempt
	out.InvokeSeq[retryVersionKey] = int(k.version)
	out.InvokeSeq[retryIndexKey] = k.index
	out.Deferred = append([]stead.Event{s.ev}, in.Deferred...)
	b := stead.Bundle{ProcessedEventID: s.ev.ID,
		Timers: []stead.TimerOp{{Action: stead.TimerSchedule, Path: RetryTimerPath, FireAt: at}}}
	if s.e.trace {
		b.Trace = &stead.TraceStep{EventID: s.ev.ID, EventKind: s.ev.Kind, From: in.ActivePath, To: in.ActivePath,
			Actions: s.actions, Context: in.Context, At: s.now}
	}
	return &out, b
}

// withoutRetry returns exe's timers and invoke counters without those of a pending retry.
func withoutRetry(exe *stead.Execution) (map[string]time.Time, map[string]int) {
	timers := maps.Clone(exe.Timers)
	delete(timers, RetryTimerPath)
	if len(timers) == 0 {
		timers = nil
	}
	seq := maps.Clone(exe.InvokeSeq)
	delete(seq, retryAttemptsKey)
	delete(seq, retryVersionKey)
	delete(seq, retryIndexKey)
	if len(seq) == 0 {
		seq = nil
	}
	return timers, seq
}

// clearRetry abandons a pending retry (the execution is cancelled, reset or moved): its timer is
// disarmed, its counters dropped and, with dropEvent, the event it held removed from Deferred.
func (s *stepper) clearRetry(dropEvent bool) {
	if _, ok := s.out.Timers[RetryTimerPath]; !ok {
		return
	}
	s.disarmTimer(RetryTimerPath)
	for _, k := range []string{retryAttemptsKey, retryVersionKey, retryIndexKey} {
		if _, ok := s.out.InvokeSeq[k]; ok {
			delete(s.invokeSeq(), k)
		}
	}
	if len(s.out.InvokeSeq) == 0 {
		s.out.InvokeSeq, s.ownSeq = nil, false
	}
	if dropEvent && len(s.out.Deferred) > 0 {
		s.out.Deferred = slices.Clone(s.out.Deferred[1:])
		if len(s.out.Deferred) == 0 {
			s.out.Deferred = nil
		}
	}
}

// whileRetrying handles an event that reaches an execution with a pending retry: the retry's own
// timer applies the held event again; any other event waits behind it.
func (e *Engine) whileRetrying(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	if ev.Kind == KindTimeout {
		var d timeoutData
		if json.Unmarshal(ev.Data, &d) == nil && d.Path == RetryTimerPath {
			armed := exe.Timers[RetryTimerPath]
			if len(exe.Deferred) == 0 || !d.FireAt.IsZero() && absDuration(armed.Sub(d.FireAt)) >= time.Microsecond {
				out := *exe
				out.UpdatedAt = now
				return &out, stead.Bundle{ProcessedEventID: ev.ID}, nil // an earlier arming's timer
			}
			return e.fireRetry(exe, ev, now)
		}
	}
	out := *exe
	out.UpdatedAt = now
	if len(exe.Deferred) >= MaxDeferred {
		s := stepper{e: e, in: exe, out: &out, now: now, ev: ev, leaf: -1, root: -1, failedAt: -1, keyVersion: exe.Version, attempt: 1}
		s.b.ProcessedEventID = ev.ID
		if err := s.locate(); err != nil {
			return nil, stead.Bundle{}, err
		}
		s.fail(fmt.Sprintf("event %q (%s) would wait behind a retry beyond %d kept events", ev.ID, ev.Kind, MaxDeferred))
		if err := s.finishStep(); err != nil {
			return nil, stead.Bundle{}, err
		}
		return s.out, s.b, nil
	}
	out.Deferred = append(slices.Clip(exe.Deferred), ev)
	return &out, stead.Bundle{ProcessedEventID: ev.ID}, nil
}

// fireRetry applies the held event again, then lets the events that waited behind it through.
func (e *Engine) fireRetry(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	head := exe.Deferred[0]
	base := *exe
	base.Deferred = slices.Clone(exe.Deferred[1:])
	if len(base.Deferred) == 0 {
		base.Deferred = nil
	}
	k := keyRef{version: int64(exe.InvokeSeq[retryVersionKey]), index: exe.InvokeSeq[retryIndexKey]}
	attempt := exe.InvokeSeq[retryAttemptsKey] + 1
	// The timer's row was deleted when it fired, so its record is dropped without a cancel op.
	base.Timers, base.InvokeSeq = withoutRetry(exe)
	out, b, r, err := e.apply(&base, head, now, k, attempt)
	if err != nil {
		return nil, stead.Bundle{}, err
	}
	b.ProcessedEventID = ev.ID
	if r.retried {
		return out, b, nil
	}
	// Whatever the attempt did, the events that waited behind it are due now. Their keys follow
	// on from this step's version.
	return e.redeliver(out, b, now, keyRef{version: exe.Version}, true)
}
