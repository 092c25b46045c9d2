package worker

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// claimBatch claims up to max messages (the places the loop took, at most BatchSize; the
// transport hands out at most one per execution, only the shared transaction's claim takes
// several, see plan).
// A partial batch waits up to BatchWait for more, so that under a trickle of events one flush
// still serves several steps, while an idle worker adds no latency at all.
func (w *Worker) claimBatch(ctx, work context.Context, max int) ([]transport.Lease, error) {
	leases, err := w.prioritised(func(minPriority int) ([]transport.Lease, error) {
		return w.tr.ClaimBatch(work, w.cfg.Name, w.cfg.Visibility, minPriority, max)
	})
	if err != nil || len(leases) == 0 || len(leases) >= max || w.cfg.BatchWait <= 0 {
		return leases, err
	}
	deadline := time.Now().Add(w.cfg.BatchWait)
	for len(leases) < max && ctx.Err() == nil {
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
		more, err := w.tr.ClaimBatch(work, w.cfg.Name, w.cfg.Visibility, 0, max-len(leases))
		if err != nil {
			w.log.Warn("claim failed", slog.Any("err", err))
			break
		}
		leases = append(leases, more...)
	}
	return leases, nil
}

// pending is a message to nack once the batch is done.
type pending struct {
	lease transport.Lease
	v     verdict
}

// batchPlan is what a batch decided for each of its messages.
type batchPlan struct {
	items   []stead.CommitItem
	stepped []int // the lease index of each item's first message
	events  []stead.Event
	// chains is aligned with items: what an item that applies several messages of its execution
	// covers besides its first (nil for the usual item of one message).
	chains []*chain
	acks   []transport.Lease
	later  []pending
	obs    *batchWatch // aligned with the leases; nil when telemetry is off
}

// chain is the rest of an item that applies consecutive messages of one execution in one
// commit: they are acknowledged with the item's first message if its commit wins and handed
// back with it (by its nack, or by the transaction's end) if it does not.
type chain struct {
	more   []int         // the lease indexes of the later messages it covers, in order
	events []stead.Event // the events of those it stepped, for OnCommit
	// then is the group's message right after the chain, when its verdict is a nack (a park, an
	// action error): settled only once the chain's commit has won, as the chain's own nack
	// stands for the whole group otherwise.
	then   *pending
	thenAt int // the lease index of then
}

// roundWait is how long a batch whose steps have started ending waits for more of them before it
// commits those that ended (chainRun.round): long enough that the steps of a batch of quick
// actions, ending within moments of each other, commit together; short enough that a slow one
// holds the others for no longer than that.
const roundWait = 10 * time.Millisecond

// chainRun is the steps of one batch running side by side: each chain (the leases of one
// group, see planChain) on a goroutine of its own, planned into a part of its own, so that
// actions that wait on I/O overlap across executions while the steps of one execution keep
// their order. Every chain holds the places (slots) of its leases until its last step has run.
type chainRun struct {
	parts []batchPlan // by chain
	done  chan int    // the chains that ended; buffered for all of them, so no sender blocks
	left  int         // chains not yet returned by round
	obs   *batchWatch
}

// startChains starts planning and stepping every chain of a batch. A batch of one chain runs on
// the caller's goroutine. stop is the worker's run context: a chain that has not started when it
// is done hands its messages back at once (planChain).
func (w *Worker) startChains(stop, work context.Context, leases []transport.Lease, loaded []stead.Loaded, obs *batchWatch) *chainRun {
	var bounds []int // chain c is leases[bounds[c]:bounds[c+1]]
	for i := 0; i < len(leases); {
		bounds = append(bounds, i)
		j := i + 1
		for j < len(leases) && leases[j].Group == leases[i].Group {
			j++
		}
		i = j
	}
	bounds = append(bounds, len(leases))
	n := len(bounds) - 1
	r := &chainRun{parts: make([]batchPlan, n), done: make(chan int, n), left: n, obs: obs}
	run := func(c int) {
		i, j := bounds[c], bounds[c+1]
		r.parts[c].obs = obs
		w.planChain(stop, work, &r.parts[c], leases, loaded, i, j)
		w.slots.give(j - i)
		r.done <- c
	}
	if n == 1 {
		run(0)
		return r
	}
	for c := range n {
		go run(c)
	}
	return r
}

// round waits for the chains still running — for all of them when all is set, else until one
// has ended and then for at most roundWait more or until all have — and returns the plan of
// those that ended, merged in the order of the batch, exactly as planning them one after
// another would have produced it.
func (r *chainRun) round(all bool) batchPlan {
	ended := []int{<-r.done}
	r.left--
	var expired <-chan time.Time // nil when all is set: waits for every chain
	if !all && r.left > 0 {
		timer := time.NewTimer(roundWait)
		defer timer.Stop()
		expired = timer.C
	}
wait:
	for r.left > 0 {
		select {
		case c := <-r.done:
			ended = append(ended, c)
			r.left--
		case <-expired:
			break wait
		}
	}
	if len(ended) == 1 {
		return r.parts[ended[0]]
	}
	slices.Sort(ended)
	p := batchPlan{obs: r.obs}
	for _, c := range ended {
		q := &r.parts[c]
		p.items = append(p.items, q.items...)
		p.stepped = append(p.stepped, q.stepped...)
		p.events = append(p.events, q.events...)
		p.chains = append(p.chains, q.chains...)
		p.acks = append(p.acks, q.acks...)
		p.later = append(p.later, q.later...)
	}
	return p
}

// loadedAt is loaded[i], or nothing when the store answered fewer refs.
func loadedAt(loaded []stead.Loaded, i int) stead.Loaded {
	if i < len(loaded) {
		return loaded[i]
	}
	return stead.Loaded{}
}

// add appends an item to commit.
func (p *batchPlan) add(it stead.CommitItem, lease int, ev stead.Event, c *chain) {
	p.items = append(p.items, it)
	p.stepped = append(p.stepped, lease)
	p.events = append(p.events, ev)
	p.chains = append(p.chains, c)
}

// planChain admits and steps the leases of one chain. Consecutive leases of one group (a
// SharedTx claim with GroupDepth above 1) form a chain: each message is admitted against the
// state the ones before it left and stepped from it, and the whole chain commits as one item —
// the final state, every bundle's side effects in order, every stepped event recorded processed,
// and the version advanced by one per stepped event (each step runs at the version it would have
// had alone, so the keys of its actions do not depend on the chaining).
// A chain stops at the first message that is neither stepped nor dropped, and before the second
// step of an execution that records its trace ring (one ring entry a commit); the messages of its
// group after it are left to the transaction's end, which hands them back in order.
//
// A message reached once stopping is done is not stepped: the worker is stopping, and it is handed
// back at once (a nack without delay), to be taken by another worker.
//
// planChain covers leases i..j-1, all of one group, in order; a lease alone of its group is a
// chain of one. Its actions run under work (see Worker.stepOnce).
func (w *Worker) planChain(stopping, work context.Context, p *batchPlan, leases []transport.Lease, loaded []stead.Loaded, i, j int) {
	exe := loadedAt(loaded, i).Execution
	var version int64 // the loaded version: what the chain's commit expects
	if exe != nil {
		version = exe.Version
	}
	var (
		first  = -1 // the lease of the first step
		c      chain
		merged stead.Bundle
	)
	// stop ends the chain at lease k, to be settled by v: at once when nothing was stepped, else
	// once the chain's commit has won.
	stop := func(k int, v verdict) {
		if first < 0 {
			p.later = append(p.later, pending{leases[k], v})
		} else {
			c.then, c.thenAt = &pending{leases[k], v}, k
		}
	}
	k := i
	for ; k < j; k++ {
		l := leases[k]
		// A message whose event an earlier step of the chain applied is a duplicate (a timeout
		// published twice, say): the store could not know it yet, the chain does.
		processed := loadedAt(loaded, k).Processed || first >= 0 && chainApplied(&merged, l.Event.ID)
		if first >= 0 && merged.Trace != nil {
			break // one trace ring entry a commit: the rest is applied by later batches
		}
		if stopping.Err() != nil {
			p.obs.outcome(k, StepDeferred, nil)
			stop(k, doResend)
			k++
			break
		}
		v, why := w.admit(exe, processed, l.Event)
		if v == doAck {
			p.obs.loaded(k, exe, processed, v)
			w.log.Debug("not stepped", slog.String("execution", l.Group), slog.String("event", l.Event.ID), slog.String("why", why))
			if first < 0 {
				p.acks = append(p.acks, l) // dropped before the first step: whatever happens
			} else {
				c.more = append(c.more, k)
			}
			continue
		}
		if v != doStep {
			p.obs.loaded(k, exe, processed, v)
			stop(k, v)
			k++
			break
		}
		if first >= 0 {
			// The version this step would run at if it committed on its own: the store advances
			// an execution's version by one per event a commit applies, so the actions' keys
			// (chart.ActionContext.Key) name the same step however its events are chained.
			// merged counts a start the first step applied before its event (Worker.step).
			exe.Version = version + int64(1+len(merged.AlsoProcessed))
		}
		next, b, err := w.step(work, exe, l.Event)
		if err != nil {
			p.obs.loaded(k, exe, processed, v)
			w.log.Error("step failed", slog.String("execution", l.Group), slog.String("event", l.Event.ID), slog.Any("err", err))
			p.obs.outcome(k, StepActionError, err)
			stop(k, doRetry)
			k++
			break
		}
		if first >= 0 && b.Trace != nil {
			break // as above, found only now: this message is left for a later batch
		}
		p.obs.loaded(k, exe, processed, v)
		keepTimerTraces(next, &b, p.obs.stepped(k, &b))
		if first < 0 {
			first, merged = k, b
		} else {
			c.more = append(c.more, k)
			c.events = append(c.events, l.Event)
			merged = mergeBundles(merged, b, l.Event.ID)
		}
		exe = next
	}
	for ; k < j; k++ {
		p.obs.outcome(k, StepDeferred, nil)
	}
	if first < 0 {
		return
	}
	if len(c.events) > 0 {
		exe.Version = version // the last step's own copy: the commit expects the loaded version
	}
	var cp *chain
	if len(c.more) > 0 || c.then != nil {
		cc := c // only a chain of several escapes to the heap
		cp = &cc
	}
	p.add(stead.CommitItem{Execution: exe, Bundle: merged}, first, leases[first].Event, cp)
}

// chainApplied reports whether the steps merged so far in a chain applied the event id (its
// first step's start included, see Worker.step).
func chainApplied(merged *stead.Bundle, id string) bool {
	return id == merged.ProcessedEventID || slices.Contains(merged.AlsoProcessed, id)
}

// mergeBundles appends the side effects of the step of event id to those of the steps before it
// in one chain: emits, spawns and timer operations in order (the store keeps the net effect of
// the timer operations), and id among the events processed.
func mergeBundles(into, b stead.Bundle, id string) stead.Bundle {
	into.Emits = append(into.Emits, b.Emits...)
	into.Spawns = append(into.Spawns, b.Spawns...)
	into.Timers = append(into.Timers, b.Timers...)
	if len(b.Attributes) > 0 {
		// A later step's attribute changes win over an earlier one's, as its execution carries
		// them: the commit stores the last step's execution.
		m := maps.Clone(into.Attributes)
		if m == nil {
			m = make(map[string]stead.AttrValue, len(b.Attributes))
		}
		maps.Copy(m, b.Attributes)
		into.Attributes = m
	}
	into.AlsoProcessed = append(into.AlsoProcessed, id)
	return into
}

// sortResults files each commit result: a success is acknowledged and relayed, a lost CAS is
// redelivered at once, any other error after RetryDelay. A chain goes with its first message: a
// success acknowledges all of it (and settles the message after it), a failure hands back the
// first message, and the rest of the chain with it.
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
		c := p.chains[k]
		switch {
		case r.Err == nil:
			it.Execution.Version = r.Version // the worker's own copy, from the engine
			p.obs.committed(i, it.Execution)
			p.acks = append(p.acks, leases[i])
			d := delivery{exe: it.Execution, b: &p.items[k].Bundle, seqs: r.Seqs, ev: p.events[k], trace: p.obs.traceOf(i)}
			if c != nil {
				for _, m := range c.more {
					p.obs.committed(m, it.Execution)
					p.acks = append(p.acks, leases[m])
				}
				if c.then != nil {
					p.later = append(p.later, *c.then)
				}
				d.also = c.events
				if n := len(c.more); n > 0 {
					d.trace = p.obs.traceOf(c.more[n-1])
				}
			}
			ds = append(ds, d)
		case errors.Is(r.Err, stead.ErrConflict):
			p.obs.outcome(i, StepConflict, nil)
			p.later = append(p.later, pending{leases[i], doResend})
			c.setAll(p.obs, StepConflict)
		default:
			w.log.Warn("commit failed", slog.String("execution", leases[i].Group), slog.Any("err", r.Err))
			p.obs.outcome(i, StepRetry, r.Err)
			p.later = append(p.later, pending{leases[i], doRetry})
			c.setAll(p.obs, StepRetry)
		}
	}
	return ds
}

// setAll records outcome for every message of c (a nil chain has none).
func (c *chain) setAll(obs *batchWatch, outcome StepOutcome) {
	if c == nil {
		return
	}
	for _, m := range c.more {
		obs.outcome(m, outcome, nil)
	}
	if c.then != nil {
		// Not settled: its nack would contradict the chain's. It is handed back with the group.
		obs.outcome(c.thenAt, StepDeferred, nil)
	}
}
