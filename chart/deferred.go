package chart

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/steadhq/stead"
)

// redeliver applies the events out keeps in Deferred again, in order, within the same step: each
// is handled, ignored, or kept (deferred again, or held behind a retry that one of them caused).
// It runs after a step that entered states, and (force) after a retry's attempt, behind which
// events waited whatever it entered. An event that is handled and enters states gives the ones
// kept before it another chance. Their idempotency keys follow on from k.
//
// A deferred event whose data is malformed (a system event held behind a retry) is dropped:
// it would have been ignored with an error had it arrived when it was sent.
func (e *Engine) redeliver(ctx context.Context, out *stead.Execution, b stead.Bundle, now time.Time, k keyRef, force bool) (*stead.Execution, stead.Bundle, error) {
	if len(out.Deferred) == 0 {
		return out, b, nil
	}
	queue := out.Deferred
	cur := *out
	cur.Deferred = nil
	for len(queue) > 0 {
		if _, retrying := cur.Timers[RetryTimerPath]; retrying || cur.Status != stead.StatusRunning {
			if !cur.Status.Finished() || cur.Status == stead.StatusFailed {
				// Behind a retry, parked by a suspension, or kept for an operator's retry.
				cur.Deferred = append(cur.Deferred, queue...)
			}
			break
		}
		d := queue[0]
		queue = queue[1:]
		next, nb, r, err := e.apply(ctx, &cur, d, now, k, 1)
		if err != nil {
			if errors.Is(err, stead.ErrInvalid) && isSystemKind(d.Kind) {
				continue
			}
			return nil, stead.Bundle{}, err
		}
		k.index = r.acts
		b = mergeBundles(b, nb)
		cur = *next
		if r.entered && !r.retried && len(cur.Deferred) > 0 {
			// The states entered may not defer what was kept before: those go again first.
			queue = append(slices.Clone(cur.Deferred), queue...)
			cur.Deferred = nil
		}
	}
	if len(cur.Deferred) == 0 {
		cur.Deferred = nil
	}
	return &cur, b, nil
}

func isSystemKind(kind string) bool { return len(kind) > 6 && kind[:6] == "stead." }

// mergeBundles appends the effects of a later application within one step to b's. The trace
// step, when there is one, spans both: b's start, next's end, every action between.
func mergeBundles(b, next stead.Bundle) stead.Bundle {
	b.Emits = append(b.Emits, next.Emits...)
	b.Spawns = append(b.Spawns, next.Spawns...)
	b.Timers = append(b.Timers, next.Timers...)
	if len(next.Attributes) > 0 {
		// The later application's changes win; b's map may be shared with a caller's bundle.
		m := maps.Clone(b.Attributes)
		if m == nil {
			m = make(map[string]stead.AttrValue, len(next.Attributes))
		}
		maps.Copy(m, next.Attributes)
		b.Attributes = m
	}
	switch {
	case b.Trace == nil:
		b.Trace = next.Trace
	case next.Trace != nil:
		t := *b.Trace
		t.Actions = append(append([]string(nil), t.Actions...), next.Trace.Actions...)
		t.To, t.Context, t.At = next.Trace.To, next.Trace.Context, next.Trace.At
		b.Trace = &t
	}
	return b
}

// deferEvent keeps the step's event for later, or fails the execution when too many are kept.
func (s *stepper) deferEvent() {
	if len(s.in.Deferred) >= MaxDeferred {
		s.fail(fmt.Sprintf("event %q (%s) would be deferred beyond %d kept events", s.ev.ID, s.ev.Kind, MaxDeferred))
		return
	}
	s.out.Deferred = append(slices.Clip(s.in.Deferred), s.ev)
}
