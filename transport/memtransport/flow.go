package memtransport

import (
	"container/heap"
	"context"
	"slices"
	"time"

	"github.com/steadhq/stead/transport"
)

// flows is what the backend remembers of flow keys: each key's limits and counts, and each
// group's key until it is forgotten. Guarded by the backend's mutex.
type flows struct {
	keys    map[string]*flowKey
	groups  map[string]*flowKey   // a group's remembered key, from its first keyed publish
	pending map[*flowKey]struct{} // keys with groups waiting for admission
}

// flowKey is one key: its limits, its admitted count, its queue and its rate bucket.
type flowKey struct {
	flow     transport.Flow
	admitted int
	waiting  []*group  // keyed groups with messages, not admitted, oldest first
	tokens   float64   // the rate bucket at at
	at       time.Time // when tokens was last computed
}

func newFlows() flows {
	return flows{keys: map[string]*flowKey{}, groups: map[string]*flowKey{}, pending: map[*flowKey]struct{}{}}
}

// remember records f's limits for its key and, unless the group has a key already, makes it the
// group's key.
func (fs *flows) remember(group string, f transport.Flow, now time.Time) {
	k := fs.keys[f.Key]
	if k == nil {
		k = &flowKey{flow: f, tokens: float64(f.Rate), at: now}
		fs.keys[f.Key] = k
	} else {
		// Refill under the old limits up to now, then hold no more than the new rate allows.
		k.tokens, k.at = k.flow.Tokens(k.tokens, k.at, now), now
		k.flow = f
		k.tokens = min(k.tokens, float64(f.Rate))
	}
	if fs.groups[group] == nil {
		fs.groups[group] = k
	}
}

// keyOf is the remembered key of a group, nil when it has none.
func (fs *flows) keyOf(group string) *flowKey { return fs.groups[group] }

// due returns the keys that have groups waiting: a claim admits what their limits allow now.
func (fs *flows) due() []*flowKey {
	if len(fs.pending) == 0 {
		return nil
	}
	out := make([]*flowKey, 0, len(fs.pending))
	for k := range fs.pending {
		out = append(out, k)
	}
	return out
}

// nextDue is the earliest time a waiting group of a key held back only by its rate gets a token.
func (fs *flows) nextDue(now time.Time) (time.Time, bool) {
	var (
		next time.Time
		ok   bool
	)
	for k := range fs.pending {
		if k.flow.Rate == 0 || (k.flow.Concurrency > 0 && k.admitted >= k.flow.Concurrency) {
			continue
		}
		due := k.flow.TokenDue(k.flow.Tokens(k.tokens, k.at, now), now)
		if !ok || due.Before(next) {
			next, ok = due, true
		}
	}
	return next, ok
}

// admit admits the waiting groups of keys that their limits allow now, oldest first, and reports
// whether it admitted any. An admitted group joins the claim order where its last service left it.
func (b *backend) admit(keys []*flowKey, now time.Time) bool {
	done := false
	for _, k := range keys {
		for len(k.waiting) > 0 && (k.flow.Concurrency == 0 || k.admitted < k.flow.Concurrency) {
			if k.flow.Rate > 0 {
				k.tokens, k.at = k.flow.Tokens(k.tokens, k.at, now), now
				if k.tokens < 1 {
					break
				}
				k.tokens--
			}
			g := k.waiting[0]
			k.waiting[0] = nil
			k.waiting = k.waiting[1:]
			g.admitted = true
			k.admitted++
			heap.Push(&b.free[g.priority], g)
			done = true
		}
		if len(k.waiting) > 0 {
			b.flow.pending[k] = struct{}{}
		} else {
			delete(b.flow.pending, k)
		}
	}
	return done
}

// Forget implements transport.Limiter.
func (b *backend) Forget(_ context.Context, groups []string) error {
	if err := b.lock(); err != nil {
		return err
	}
	defer b.mu.Unlock()
	now := b.now()
	freed := false
	var keys []*flowKey
	for _, id := range groups {
		delete(b.flow.groups, id)
		g := b.groups[id]
		if g == nil || g.key == nil {
			continue
		}
		k := g.key
		g.key = nil
		keys = append(keys, k)
		if g.admitted {
			g.admitted = false
			k.admitted--
			continue
		}
		// Waiting: it leaves the key's queue and is claimable at once, unlimited.
		k.waiting = slices.DeleteFunc(k.waiting, func(x *group) bool { return x == g })
		heap.Push(&b.free[g.priority], g)
		freed = true
	}
	if b.admit(keys, now) {
		freed = true
	}
	if freed {
		b.sig.Notify()
	}
	return nil
}

// FlowState implements transport.Limiter.
func (b *backend) FlowState(_ context.Context, key string) (transport.FlowState, error) {
	if err := b.lock(); err != nil {
		return transport.FlowState{}, err
	}
	defer b.mu.Unlock()
	k := b.flow.keys[key]
	if k == nil {
		return transport.FlowState{Flow: transport.Flow{Key: key}}, nil
	}
	return transport.FlowState{Flow: k.flow, Admitted: k.admitted, Waiting: len(k.waiting)}, nil
}
