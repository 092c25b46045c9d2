package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// feeder publishes work to the drill's executions at a steady rate, as senders would, and keeps
// count of what it published. A publish that fails is sent again with the same event ids until it
// lands: a publish whose outcome was unknown may then arrive twice, which the executions must
// apply once.
type feeder struct {
	tr       *transport.Transport
	execs    []string
	armEvery int

	mu      sync.Mutex
	next    int            // the execution the next event goes to
	work    map[string]int // work events published, by execution
	arms    map[string]int // arm events published, by execution
	retries int            // publishes sent again after a failure
}

func newFeeder(tr *transport.Transport, execs []string, armEvery int) *feeder {
	return &feeder{tr: tr, execs: execs, armEvery: armEvery, work: map[string]int{}, arms: map[string]int{}}
}

// run publishes rate events a second until ctx is done.
func (f *feeder) run(ctx context.Context, rate int) {
	const tick = 50 * time.Millisecond
	per := max(rate*int(tick)/int(time.Second), 1)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// Not ctx: a publish that had begun when the drill stops the feeder lands (and is
		// counted) before run returns, so that the counts are exactly what was published.
		f.publish(context.WithoutCancel(ctx), "", per, true)
	}
}

// publish publishes n events, round-robin over the executions, work events with ids that start
// with prefix and, when arms is set, every armEvery-th event of an execution an arm instead. It
// returns once they landed: it retries for as long as it takes.
func (f *feeder) publish(ctx context.Context, prefix string, n int, arms bool) {
	f.mu.Lock()
	out := make([]transport.Outgoing, 0, n)
	work := map[string]int{}
	arm := map[string]int{}
	for range n {
		exe := f.execs[f.next%len(f.execs)]
		f.next++
		k := f.work[exe] + f.arms[exe] + work[exe] + arm[exe]
		ev := stead.Event{ID: fmt.Sprintf("%sw-%s-%d", prefix, exe, k), Kind: "work"}
		if arms && f.armEvery > 0 && k%f.armEvery == f.armEvery-1 {
			ev = stead.Event{ID: fmt.Sprintf("a-%s-%d", exe, k), Kind: "arm"}
			arm[exe]++
		} else {
			work[exe]++
		}
		ev.CreatedAt = time.Now()
		out = append(out, transport.Outgoing{Group: exe, Event: ev})
	}
	f.mu.Unlock()
	for len(out) > 0 {
		chunk := out[:min(len(out), transport.MaxBatch)]
		for {
			if err := f.tr.PublishBatch(ctx, chunk); err == nil {
				break
			}
			f.mu.Lock()
			f.retries++
			f.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
		f.mu.Lock()
		for _, m := range chunk {
			if m.Event.Kind == "arm" {
				f.arms[m.Group]++
			} else {
				f.work[m.Group]++
			}
		}
		f.mu.Unlock()
		out = out[len(chunk):]
	}
}

// sent returns copies of the counts of published work, arms, and the retried publishes.
func (f *feeder) sent() (work, arms map[string]int, retries int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	work, arms = map[string]int{}, map[string]int{}
	for k, v := range f.work {
		work[k] = v
	}
	for k, v := range f.arms {
		arms[k] = v
	}
	return work, arms, f.retries
}
