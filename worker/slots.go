package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/steadhq/stead/transport"
)

// slots bounds the steps a worker runs at once (Config.MaxWorkers), across its claim loops. A
// loop takes places before it claims and claims no more messages than it got, so a claimed
// message never waits for a place: it starts at once, and what a loop cannot start it does not
// claim, leaving it to a worker that can.
type slots chan struct{}

func newSlots(n int) slots { return make(slots, n) }

// take waits until at least one place is free (or ctx is done: 0), then takes up to max
// without waiting further, and returns how many it took. Nil slots bound nothing.
func (s slots) take(ctx context.Context, max int) int {
	if s == nil {
		return max
	}
	select {
	case s <- struct{}{}:
	case <-ctx.Done():
		return 0
	}
	n := 1
	for n < max {
		select {
		case s <- struct{}{}:
			n++
		default:
			return n
		}
	}
	return n
}

// give frees n places.
func (s slots) give(n int) {
	if s == nil {
		return
	}
	for range n {
		<-s
	}
}

// heartbeat extends the leases of the messages whose steps are running, so that a step may run
// longer than Visibility while a worker that dies still frees its messages within Visibility
// (transport.Extender). Every Visibility/3 it extends, to Visibility from then, each lease it
// holds that is at least Visibility/3 old, in one call per MaxBatch leases: a lease is renewed
// at the latest 2/3·Visibility after its claim or last renewal, a third before it would end.
//
// A lease leaves the heartbeat before it is acknowledged or handed back (drop): drop waits for
// an extension in flight, so an extension never lands after a nack and stretches its park.
//
// A step whose action ignores its context could run for ever; its lease is extended for at most
// maxAge after the claim (twice ActionTimeout, for a start applied before its event, plus
// Visibility for the load and the commit), then left to end, so that another worker takes the
// execution over. maxAge 0 extends for as long as the step runs (ActionTimeout negative).
type heartbeat struct {
	vis    time.Duration
	maxAge time.Duration

	mu     sync.Mutex // held across an extension, see drop
	leases map[string]beat
}

// beat is a lease the heartbeat keeps and when it was claimed or last extended.
type beat struct {
	lease   transport.Lease
	claimed time.Time
	since   time.Time
}

func newHeartbeat(vis, maxAge time.Duration) *heartbeat {
	return &heartbeat{vis: vis, maxAge: maxAge, leases: map[string]beat{}}
}

// key is a lease's identity in the heartbeat: a claim's token may serve several groups.
func beatKey(l *transport.Lease) string { return l.Token + "\x00" + l.Group }

// add starts keeping ls (nil-safe: a worker without heartbeat has none).
func (h *heartbeat) add(ls []transport.Lease) {
	if h == nil || len(ls) == 0 {
		return
	}
	now := time.Now()
	h.mu.Lock()
	for i := range ls {
		h.leases[beatKey(&ls[i])] = beat{lease: ls[i], claimed: now, since: now}
	}
	h.mu.Unlock()
}

// drop stops keeping ls, waiting for an extension in flight.
func (h *heartbeat) drop(ls ...transport.Lease) {
	if h == nil || len(ls) == 0 {
		return
	}
	h.mu.Lock()
	for i := range ls {
		delete(h.leases, beatKey(&ls[i]))
	}
	h.mu.Unlock()
}

// run extends due leases every Visibility/3 until ctx is done.
func (h *heartbeat) run(ctx context.Context, tr *transport.Transport, log *slog.Logger) {
	t := time.NewTicker(h.vis / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.beat(ctx, tr, log)
		}
	}
}

// beat extends every lease at least Visibility/3 old.
func (h *heartbeat) beat(ctx context.Context, tr *transport.Transport, log *slog.Logger) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	var due []transport.Lease
	for k, b := range h.leases {
		switch {
		case h.maxAge > 0 && now.Sub(b.claimed) > h.maxAge:
			log.Warn("a step outlived its ActionTimeout; its lease is left to end and another worker may run it again",
				slog.String("execution", b.lease.Group), slog.String("event", b.lease.Event.ID))
			delete(h.leases, k)
		case now.Sub(b.since) >= h.vis/3:
			due = append(due, b.lease)
		}
	}
	for len(due) > 0 {
		n := min(len(due), transport.MaxBatch)
		// An extension may not hold up the steps that wait to drop their leases for long.
		xctx, cancel := context.WithTimeout(ctx, h.vis/3)
		held, err := tr.Extend(xctx, due[:n], h.vis)
		cancel()
		if err != nil {
			log.Warn("lease heartbeat failed; retrying at the next beat", slog.Int("leases", n), slog.Any("err", err))
			return
		}
		if held < n {
			log.Debug("leases lost before their steps ended", slog.Int("lost", n-held))
		}
		for i := range due[:n] {
			k := beatKey(&due[i])
			if b, ok := h.leases[k]; ok {
				b.since = now
				h.leases[k] = b
			}
		}
		due = due[n:]
	}
}
