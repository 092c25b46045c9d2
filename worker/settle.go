package worker

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/steadhq/stead/transport"
)

// An ack or nack that fails (the database restarted, the network dropped) would leave its group
// leased until the lease ends: after an outage every message in flight then waits out Visibility
// although the database is back in a second. The settler retries such acks and nacks with a
// growing, jittered pause instead, until one lands, the lease has ended (the group is claimable
// again anyway, and a later ack would find a stale token or a redelivery would be dropped as
// processed) or the worker stops. Retrying is safe: both are fenced by the lease's token, so one
// that landed already, or whose group was claimed again since, changes nothing.

// settlement is an ack or a nack to retry.
type settlement struct {
	leases   []transport.Lease // acked together; a nack has one
	nack     bool
	delay    time.Duration // the nack's
	failures int
	next     time.Time // when to try again
}

// until is when the settlement stops mattering: when the last of its leases ends.
func (s *settlement) until() time.Time {
	var u time.Time
	for _, l := range s.leases {
		if l.Until.After(u) {
			u = l.Until
		}
	}
	return u
}

// settler holds the failed settlements of a worker and retries them from Run.
type settler struct {
	mu      sync.Mutex
	pending []*settlement
	wake    chan struct{}
}

func newSettler() *settler { return &settler{wake: make(chan struct{}, 1)} }

// add queues s for a retry after the first pause.
func (st *settler) add(s *settlement, base time.Duration) {
	s.failures++
	s.next = time.Now().Add(settleBackoff(s.failures, base))
	st.mu.Lock()
	st.pending = append(st.pending, s)
	st.mu.Unlock()
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// settleBackoff is the pause after the n-th failure in a row: 50 ms doubled per failure up to
// max (RetryDelay), then jittered down by up to half so that the workers of a fleet do not retry
// in step against a database that just came back.
func settleBackoff(n int, max time.Duration) time.Duration {
	d := 50 * time.Millisecond << min(n-1, 10)
	if max > 0 {
		d = min(d, max)
	}
	return d/2 + rand.N(d/2+1)
}

// runSettler retries due settlements until ctx is done; what is left then waits out its lease.
func (w *Worker) runSettler(ctx context.Context) {
	st := w.retries
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		now := time.Now()
		st.mu.Lock()
		var due []*settlement
		keep := st.pending[:0]
		next := now.Add(time.Hour)
		for _, s := range st.pending {
			switch {
			case !now.Before(s.until()):
				w.log.Debug("settlement dropped: its lease ended", slog.Int("messages", len(s.leases)))
			case !now.Before(s.next):
				due = append(due, s)
			default:
				keep = append(keep, s)
				if s.next.Before(next) {
					next = s.next
				}
			}
		}
		clear(st.pending[len(keep):])
		st.pending = keep
		st.mu.Unlock()
		for _, s := range due {
			if err := w.trySettle(ctx, s); err != nil {
				if ctx.Err() != nil {
					return
				}
				w.log.Debug("settlement failed again", slog.Int("failures", s.failures), slog.Any("err", err))
				st.add(s, w.cfg.RetryDelay)
			} else {
				w.log.Debug("settlement landed on retry", slog.Int("failures", s.failures))
			}
		}
		if len(due) > 0 {
			continue // what failed was queued again: recompute the next wake-up
		}
		t.Reset(time.Until(next))
		select {
		case <-ctx.Done():
			return
		case <-st.wake:
			if !t.Stop() {
				<-t.C
			}
		case <-t.C:
		}
	}
}

func (w *Worker) trySettle(ctx context.Context, s *settlement) error {
	if s.nack {
		return w.tr.Nack(ctx, &s.leases[0], s.delay)
	}
	return w.tr.AckBatch(ctx, s.leases)
}

// ack acknowledges ls; a failure is logged and retried by the settler.
func (w *Worker) ack(ctx context.Context, ls []transport.Lease) {
	if len(ls) == 0 {
		return
	}
	w.beats.drop(ls...)
	actx, end := w.obs.transport(ctx, "AckBatch", len(ls))
	err := w.tr.AckBatch(actx, ls)
	done(end, err)
	if err != nil {
		w.log.Warn("ack failed; retrying until the lease ends", slog.Int("messages", len(ls)),
			slog.String("execution", ls[0].Group), slog.Any("err", err))
		w.retries.add(&settlement{leases: append([]transport.Lease(nil), ls...)}, w.cfg.RetryDelay)
	}
}

// nack hands l back, to be claimable again after delay; a failure is logged and retried by the
// settler.
func (w *Worker) nack(ctx context.Context, l *transport.Lease, delay time.Duration) {
	w.beats.drop(*l)
	nctx, end := w.obs.transport(ctx, "Nack", 1)
	err := w.tr.Nack(nctx, l, delay)
	done(end, err)
	if err != nil {
		w.log.Warn("nack failed; retrying until the lease ends", slog.String("execution", l.Group), slog.Any("err", err))
		w.retries.add(&settlement{leases: []transport.Lease{*l}, nack: true, delay: delay}, w.cfg.RetryDelay)
	}
}
