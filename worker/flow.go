package worker

import (
	"context"
	"sync"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/transport"
)

// defined is a Machine that knows its definition (*chart.Engine), and so its Limit.
type defined interface {
	Definition() *chart.Definition
}

// flowOf is the transport flow an execution's start is published with: its definition's
// chart.Limit, keyed by the execution's context or attributes, or none. Only roots are limited:
// a child's events reach it through its parent's steps, which hold their own places. The
// transport remembers the key from the start on, so no later publish needs to name it.
func flowOf(ms Machines, exe *stead.Execution) transport.Flow {
	l := limitOf(ms, exe)
	if l == nil {
		return transport.Flow{}
	}
	return transport.Flow{
		Key:         l.FlowKey(exe.DefinitionID, exe.Context, exe.Attributes),
		Concurrency: l.Concurrency, Rate: l.Rate, Per: l.Per,
	}
}

// limitOf is the limit exe runs under, nil when none: only roots are limited.
func limitOf(ms Machines, exe *stead.Execution) *chart.Limit {
	if exe.ParentID != "" {
		return nil
	}
	if d, ok := ms[exe.DefinitionID].(defined); ok {
		return d.Definition().Limit
	}
	return nil
}

// limited reports whether ms runs any definition with a limit.
func limited(ms Machines) bool {
	for _, m := range ms {
		if d, ok := m.(defined); ok && d.Definition().Limit != nil {
			return true
		}
	}
	return false
}

// forgetInterval is how often a worker whose definitions declare limits tells the transport to
// forget the keys of the executions that finished meanwhile.
const forgetInterval = time.Second

// forgetter holds the executions that finished for good since the last flush, so that their keys
// are forgotten off the step path: forgetting only bounds the transport's memory of keys, and a
// round trip per batch on the loops cost a limit that does not bind a tenth of its rate.
type forgetter struct {
	mu     sync.Mutex
	groups []string
}

// finished notes the limited executions among ds that finished for good (done or cancelled: a
// failed root may still be retried).
func (w *Worker) finished(ds []delivery) {
	for _, d := range ds {
		s := d.exe.Status
		if (s == stead.StatusDone || s == stead.StatusCancelled) && limitOf(w.cfg.Machines, d.exe) != nil {
			w.forgets.mu.Lock()
			w.forgets.groups = append(w.forgets.groups, d.exe.ID)
			w.forgets.mu.Unlock()
		}
	}
}

// forget tells the transport to forget what finished since the last call. A failure costs only
// that memory, so it is logged and the groups are kept for the next call.
func (w *Worker) forget(ctx context.Context) {
	w.forgets.mu.Lock()
	groups := w.forgets.groups
	w.forgets.groups = nil
	w.forgets.mu.Unlock()
	for len(groups) > 0 {
		n := min(len(groups), transport.MaxBatch)
		if err := w.tr.Forget(ctx, groups[:n]); err != nil {
			w.log.Warn("forgetting the flow keys of finished executions failed", "count", len(groups), "err", err)
			w.forgets.mu.Lock()
			w.forgets.groups = append(w.forgets.groups, groups...)
			w.forgets.mu.Unlock()
			return
		}
		groups = groups[n:]
	}
}
