package otelstead

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// sampleTimeout bounds one sample of the backends' statistics, so that a slow database delays
// a metrics collection by at most this long.
const sampleTimeout = 5 * time.Second

// sampler answers the gauges from the backends' statistics (stead.StatsBackend,
// transport.StatsBackend, and Store.Count where the backend counts in one query), querying them
// at most once per StatsInterval however often the metrics are collected: the queries count
// whole tables, which a collection every few seconds must not repeat.
type sampler struct {
	store    stead.StatsBackend     // nil when the store's backend reports nothing
	tr       transport.StatsBackend // nil likewise
	counter  *stead.Store           // nil unless the backend is a stead.Counter
	interval time.Duration
	clock    func() time.Time

	mu   sync.Mutex
	at   time.Time // when the last sample was taken (zero: never)
	last sample
}

// sample is one answer of the backends.
type sample struct {
	stats         stead.StoreStats
	counts        stead.Counts
	queues        []transport.QueueStat
	okS, okC, okQ bool
}

// Run registers the gauges that the backends of a running worker can answer, until stop: the
// worker calls it as its Run starts and stop as it returns. It registers nothing when metrics
// are off or neither backend reports statistics.
func (t *Observer) Run(store *stead.Store, tr *transport.Transport) (stop func(), err error) {
	reg, err := t.registerGauges(store, tr)
	if err != nil || reg == nil {
		return nil, err
	}
	return func() { _ = reg.Unregister() }, nil
}

func (t *Observer) registerGauges(store *stead.Store, tr *transport.Transport) (metric.Registration, error) {
	if !t.metering {
		return nil, nil
	}
	s := &sampler{interval: t.statsInterval, clock: time.Now}
	s.store, _ = store.Backend().(stead.StatsBackend)
	s.tr, _ = tr.Backend().(transport.StatsBackend)
	if _, ok := store.Backend().(stead.Counter); ok {
		// Another backend would be paged through whole at every sample: no gauge is worth that.
		s.counter = store
	}
	if s.store == nil && s.tr == nil && s.counter == nil {
		return nil, nil
	}
	m := t.meter
	var insts []metric.Observable
	var depth, outbox, spawns, executions metric.Int64ObservableGauge
	var age metric.Float64ObservableGauge
	var err error
	if s.tr != nil {
		if depth, err = m.Int64ObservableGauge("stead.queue.depth", metric.WithUnit("{message}"),
			metric.WithDescription("Messages waiting in the transport, by priority.")); err != nil {
			return nil, err
		}
		if age, err = m.Float64ObservableGauge("stead.queue.oldest_age", metric.WithUnit("s"),
			metric.WithDescription("Age of the earliest published message still waiting, by priority.")); err != nil {
			return nil, err
		}
		insts = append(insts, depth, age)
	}
	if s.store != nil {
		if outbox, err = m.Int64ObservableGauge("stead.outbox.backlog", metric.WithUnit("{row}"),
			metric.WithDescription("Outbox rows committed and not yet relayed.")); err != nil {
			return nil, err
		}
		if spawns, err = m.Int64ObservableGauge("stead.spawn.backlog", metric.WithUnit("{intent}"),
			metric.WithDescription("Spawn intents committed and not yet relayed.")); err != nil {
			return nil, err
		}
		insts = append(insts, outbox, spawns)
	}
	if s.counter != nil {
		if executions, err = m.Int64ObservableGauge("stead.executions", metric.WithUnit("{execution}"),
			metric.WithDescription("Executions in the store, by status.")); err != nil {
			return nil, err
		}
		insts = append(insts, executions)
	}
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		sm := s.sample(ctx)
		now := s.clock()
		if sm.okQ {
			if len(sm.queues) == 0 || sm.queues[0].Priority != 0 {
				// An empty queue still has a depth: 0, at the priority most messages have.
				o.ObserveInt64(depth, 0, metric.WithAttributes(attrPriority.Int(0)))
			}
			for _, q := range sm.queues {
				p := metric.WithAttributes(attrPriority.Int(q.Priority))
				o.ObserveInt64(depth, q.Depth, p)
				if !q.Oldest.IsZero() {
					o.ObserveFloat64(age, max(now.Sub(q.Oldest), 0).Seconds(), p)
				}
			}
		}
		if sm.okS {
			o.ObserveInt64(outbox, sm.stats.Outbox)
			o.ObserveInt64(spawns, sm.stats.Spawns)
		}
		if sm.okC {
			for status, n := range sm.counts.ByStatus {
				o.ObserveInt64(executions, n, metric.WithAttributes(attrStatus.String(string(status))))
			}
		}
		return nil
	}, insts...)
}

// sample returns the last statistics, querying the backends again when they are older than the
// interval. A failed query keeps nothing: its gauges are left out until the next sample.
func (s *sampler) sample(ctx context.Context) sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at.IsZero() || time.Since(s.at) >= s.interval {
		ctx, cancel := context.WithTimeout(ctx, sampleTimeout)
		defer cancel()
		s.at = time.Now()
		var n sample
		var err error
		if s.store != nil {
			n.stats, err = s.store.StoreStats(ctx)
			n.okS = err == nil
		}
		if s.counter != nil {
			n.counts, err = s.counter.Count(ctx, stead.ListFilter{})
			n.okC = err == nil
		}
		if s.tr != nil {
			n.queues, err = s.tr.QueueStats(ctx)
			n.okQ = err == nil
		}
		s.last = n
	}
	return s.last
}
