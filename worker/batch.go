package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// claimBatch claims up to BatchSize messages (the transport hands out at most one per execution).
// A partial batch waits up to BatchWait for more, so that under a trickle of events one flush
// still serves several steps, while an idle worker adds no latency at all.
func (w *Worker) claimBatch(ctx, work context.Context) ([]transport.Lease, error) {
	leases, err := w.prioritised(func(minPriority int) ([]transport.Lease, error) {
		return w.tr.ClaimBatch(work, w.cfg.Name, w.cfg.Visibility, minPriority, w.cfg.BatchSize)
	})
	if err != nil || len(leases) == 0 || len(leases) >= w.cfg.BatchSize || w.cfg.BatchWait <= 0 {
		return leases, err
	}
	deadline := time.Now().Add(w.cfg.BatchWait)
	for len(leases) < w.cfg.BatchSize && ctx.Err() == nil {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		wctx, cancel := context.WithTimeout(ctx, left)
		werr := w.tr.Wait(wctx)
		cancel()
		if werr != nil {
			break // the bound passed (or ctx is done): process what we have
		}
		more, err := w.tr.ClaimBatch(work, w.cfg.Name, w.cfg.Visibility, 0, w.cfg.BatchSize-len(leases))
		if err != nil {
			w.log.Warn("claim failed", slog.Any("err", err))
			break
		}
		leases = append(leases, more...)
	}
	return leases, nil
}

// batch claims a batch and handles it: one LoadForEvents, one CommitBatch, one publish of every
// emit, one AckOutbox and one AckBatch serve all of its steps. A lost compare-and-swap redelivers
// only its own message.
func (w *Worker) batch(ctx, work context.Context) (int, error) {
	start := w.tel.now()
	leases, err := w.claimBatch(ctx, work)
	if err != nil || len(leases) == 0 {
		return 0, err
	}
	work, obs, span := w.tel.beginBatch(work, leases, start)
	defer obs.end(span)
	refs := make([]stead.EventRef, len(leases))
	for i, l := range leases {
		refs[i] = stead.EventRef{ExecutionID: l.Group, EventID: l.Event.ID}
	}
	lctx, lspan := w.tel.store(work, "LoadForEvents", "stead_executions", len(refs))
	loaded, err := w.store.LoadForEvents(lctx, refs)
	endSpan(lspan, err)
	if err != nil {
		w.log.Warn("batch load failed", slog.Int("size", len(leases)), slog.Any("err", err))
		obs.setAll(outcomeRetry)
		for i := range leases {
			w.nack(work, &leases[i], w.cfg.RetryDelay)
		}
		return len(leases), nil
	}
	p := w.plan(leases, loaded, obs)
	var ds []delivery
	if len(p.items) > 0 {
		cctx, cspan := w.tel.store(work, "CommitBatch", "stead_executions", len(p.items))
		results, err := w.store.CommitBatch(cctx, p.items)
		endSpan(cspan, err)
		if err != nil {
			w.log.Warn("batch commit failed", slog.Int("size", len(p.items)), slog.Any("err", err))
			for _, i := range p.stepped {
				obs.at(i).set(outcomeRetry)
				p.later = append(p.later, pending{leases[i], doRetry})
			}
		} else {
			ds = w.sortResults(leases, &p, results)
		}
	}
	for _, d := range ds {
		w.committed(d.exe, d.ev)
	}
	if len(ds) > 0 {
		if err := w.deliver(work, ds); err != nil {
			w.log.Warn("delivery deferred to the relay", slog.Any("err", err))
		}
	}
	w.ack(work, p.acks)
	for _, q := range p.later {
		w.settle(work, &q.lease, q.v)
	}
	return len(leases), nil
}

// pending is a message to nack once the batch is done.
type pending struct {
	lease transport.Lease
	v     verdict
}

// batchPlan is what a batch decided for each of its messages.
type batchPlan struct {
	items   []stead.CommitItem
	stepped []int // the lease index of each item
	events  []stead.Event
	acks    []transport.Lease
	later   []pending
	obs     stepObsList // aligned with the leases; nil when telemetry is off
}

// plan admits and steps every loaded message of a batch.
func (w *Worker) plan(leases []transport.Lease, loaded []stead.Loaded, obs stepObsList) batchPlan {
	p := batchPlan{obs: obs}
	for i, l := range leases {
		var ld stead.Loaded
		if i < len(loaded) {
			ld = loaded[i]
		}
		v, why := w.admit(ld.Execution, ld.Processed, l.Event)
		obs.at(i).loaded(ld.Execution, ld.Processed, v)
		if v == doAck {
			w.log.Debug("not stepped", slog.String("execution", l.Group), slog.String("event", l.Event.ID), slog.String("why", why))
			p.acks = append(p.acks, l)
			continue
		}
		if v != doStep {
			p.later = append(p.later, pending{l, v})
			continue
		}
		next, b, err := w.step(ld.Execution, l.Event)
		if err != nil {
			w.log.Error("step failed", slog.String("execution", l.Group), slog.String("event", l.Event.ID), slog.Any("err", err))
			obs.at(i).set(outcomeActionError)
			p.later = append(p.later, pending{l, doRetry})
			continue
		}
		obs.at(i).stepped(&b)
		keepTimerTraces(next, &b, obs.at(i).traceOf())
		p.items = append(p.items, stead.CommitItem{Execution: next, Bundle: b})
		p.stepped = append(p.stepped, i)
		p.events = append(p.events, l.Event)
	}
	return p
}

// sortResults files each commit result: a success is acknowledged and relayed, a lost CAS is
// redelivered at once, any other error after RetryDelay.
func (w *Worker) sortResults(leases []transport.Lease, p *batchPlan, results []stead.CommitResult) []delivery {
	var ds []delivery
	for k, i := range p.stepped {
		var r stead.CommitResult
		if k < len(results) {
			r = results[k]
		} else {
			r.Err = errors.New("worker: store returned too few batch results")
		}
		it := p.items[k]
		switch {
		case r.Err == nil:
			it.Execution.Version = r.Version // the worker's own copy, from the engine
			o := p.obs.at(i)
			o.committed(it.Execution)
			p.acks = append(p.acks, leases[i])
			ds = append(ds, delivery{exe: it.Execution, b: &p.items[k].Bundle, seqs: r.Seqs, ev: p.events[k], trace: o.traceOf()})
		case errors.Is(r.Err, stead.ErrConflict):
			p.obs.at(i).set(outcomeConflict)
			p.later = append(p.later, pending{leases[i], doResend})
		default:
			w.log.Warn("commit failed", slog.String("execution", leases[i].Group), slog.Any("err", r.Err))
			p.obs.at(i).set(outcomeRetry)
			p.later = append(p.later, pending{leases[i], doRetry})
		}
	}
	return ds
}
