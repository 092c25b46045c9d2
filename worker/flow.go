package worker

import (
	"context"

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
	if exe.ParentID != "" {
		return transport.Flow{}
	}
	d, ok := ms[exe.DefinitionID].(defined)
	if !ok {
		return transport.Flow{}
	}
	l := d.Definition().Limit
	if l == nil {
		return transport.Flow{}
	}
	return transport.Flow{
		Key:         l.FlowKey(exe.DefinitionID, exe.Context, exe.Attributes),
		Concurrency: l.Concurrency, Rate: l.Rate, Per: l.Per,
	}
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

// forgetFinished tells the transport to forget the keys of the limited executions among ds that
// finished for good (done or cancelled: a failed root may still be retried), so that the
// transport's memory of keys does not grow with every execution ever run. A failure costs only
// that memory, so it is logged and left.
func (r *relay) forgetFinished(ctx context.Context, ds []delivery) {
	var groups []string
	for _, d := range ds {
		s := d.exe.Status
		if (s == stead.StatusDone || s == stead.StatusCancelled) && flowOf(r.machines, d.exe).Limited() {
			groups = append(groups, d.exe.ID)
		}
	}
	for len(groups) > 0 {
		n := min(len(groups), transport.MaxBatch)
		if err := r.tr.Forget(ctx, groups[:n]); err != nil {
			r.log.Warn("forgetting the flow keys of finished executions failed", "count", n, "err", err)
			return
		}
		groups = groups[n:]
	}
}
