package transport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/steadhq/stead/internal/check"
)

// Limits on what a Flow may declare.
const (
	// MaxConcurrency bounds Flow.Concurrency.
	MaxConcurrency = 1 << 20
	// MaxRate bounds Flow.Rate.
	MaxRate = 1 << 30
	// MaxPer bounds Flow.Per.
	MaxPer = MaxVisibility
)

// Flow is a group's admission rule: the groups that share a Key share its limits. A keyed group's
// messages are claimable only while the group is admitted, and a group is admitted only while
// its key has room:
//
//   - at most Concurrency groups of the key are admitted at once (0: no such limit);
//   - at most Rate groups of the key are admitted in any Per: a bucket of Rate tokens, full when
//     the key is first seen, refilled at Rate per Per, one token taken by each admission (0: no
//     such limit).
//
// A keyed group that has messages and is not admitted waits in its key's queue, oldest first, and
// is admitted as soon as the key has room: when it is published to, when an admitted group of the
// key is acked or forgotten, and, for a rate, when a token is due (at the latest at the first
// claim after it is). Admission lasts until the group's lease is acked; then, if the group still
// has messages, it waits again at the back of its key's queue. A nack (with or without a delay),
// a lease that ends and a released lease keep the group admitted: whoever claims the group next
// holds its place, so a dead worker's place is taken over when its lease ends.
//
// Claims order admitted groups and unkeyed groups alike, round-robin: a key holds at most
// Concurrency places in that order, so a busy key cannot starve the others.
type Flow struct {
	// Key names the groups that share these limits. Empty: the group is not limited (and the
	// other fields must be zero).
	Key string
	// Concurrency is how many groups of Key may be admitted at once; 0 sets no limit.
	Concurrency int
	// Rate is how many admissions of Key's groups a Per allows; 0 sets no limit.
	Rate int
	// Per is the period of Rate (0 < Per <= MaxPer when Rate is set, 0 otherwise).
	Per time.Duration
}

// Limited reports whether f names a key.
func (f Flow) Limited() bool { return f.Key != "" }

// FlowState is what a transport holds for one key at the moment it is read.
type FlowState struct {
	Flow
	// Admitted is how many groups of the key are admitted.
	Admitted int
	// Waiting is how many groups of the key have messages and wait for admission.
	Waiting int
}

// Limiter is what a Backend implements to honour Outgoing.Flow. It is optional: a Transport whose
// backend lacks it refuses a keyed publish with an error wrapping errors.ErrUnsupported.
//
// A Limiter remembers a group's key from the first publish that names one until the group is
// forgotten: later publishes to the group (also after it emptied and was deleted) need not name
// it, and one that names another key leaves the group's key as it was. A key first named for a
// group that already has messages applies from the group's next creation (after its messages are
// acked): the key is meant to be named by the publish that starts the group. Every keyed publish sets
// its key's limits to the ones it names, so a changed declaration takes effect with the next
// publish that carries it; limits are stored with the transport and survive restarts.
// Admission is exact across processes sharing a database: a key never has more groups admitted
// than its Concurrency, however many claimers race.
type Limiter interface {
	// Forget drops what the transport remembers of the groups' keys (an execution that finished
	// will not be limited again). A forgotten group that was admitted gives its place back; one
	// that was waiting becomes claimable at once, unlimited. Unknown groups are ignored.
	Forget(ctx context.Context, groups []string) error
	// FlowState reads a key's limits and counts. An unknown key returns a zero FlowState with
	// the Key set.
	FlowState(ctx context.Context, key string) (FlowState, error)
}

// CanLimit reports whether t's backend honours flows (Limiter).
func (t *Transport) CanLimit() bool {
	_, ok := t.b.(Limiter)
	return ok
}

// Forget forgets the keys of groups (at most MaxBatch, each a valid group id): see Limiter. On a
// backend without flows it checks its input and does nothing, since no group can have a key
// there.
func (t *Transport) Forget(ctx context.Context, groups []string) error {
	if err := CheckForget(groups); err != nil {
		return err
	}
	if err := t.enter(ctx); err != nil {
		return err
	}
	defer t.leave()
	l, ok := t.b.(Limiter)
	if !ok || len(groups) == 0 {
		return nil
	}
	return l.Forget(ctx, groups)
}

// FlowState reads the limits and counts of a key (a valid id): see Limiter. On a backend without
// flows it returns an error wrapping errors.ErrUnsupported.
func (t *Transport) FlowState(ctx context.Context, key string) (FlowState, error) {
	if err := check.ID("flow key", key); err != nil {
		return FlowState{}, err
	}
	if err := t.enter(ctx); err != nil {
		return FlowState{}, err
	}
	defer t.leave()
	l, ok := t.b.(Limiter)
	if !ok {
		return FlowState{}, fmt.Errorf("transport: flow state: %w", errors.ErrUnsupported)
	}
	return l.FlowState(ctx, key)
}

// CheckFlow checks a flow: an empty key with no limits, or a valid key with Concurrency in
// 0..MaxConcurrency, Rate in 0..MaxRate, and Per in (0, MaxPer] when Rate is set and 0 when it is
// not. An error wraps stead.ErrInvalid.
func CheckFlow(f Flow) error {
	if f.Key == "" {
		if f != (Flow{}) {
			return check.Invalidf("flow has limits but no key")
		}
		return nil
	}
	if err := check.ID("flow key", f.Key); err != nil {
		return err
	}
	if f.Concurrency < 0 || f.Concurrency > MaxConcurrency {
		return check.Invalidf("flow concurrency %d outside 0..%d", f.Concurrency, MaxConcurrency)
	}
	if f.Rate < 0 || f.Rate > MaxRate {
		return check.Invalidf("flow rate %d outside 0..%d", f.Rate, MaxRate)
	}
	if f.Rate == 0 && f.Per != 0 {
		return check.Invalidf("flow period %v without a rate", f.Per)
	}
	if f.Rate > 0 && (f.Per <= 0 || f.Per > MaxPer) {
		return check.Invalidf("flow period %v outside (0, %v]", f.Per, MaxPer)
	}
	if f.Per%time.Microsecond != 0 {
		return check.Invalidf("flow period %v is finer than a microsecond", f.Per)
	}
	return nil
}

// CheckForget checks the groups of a Forget: at most MaxBatch, each a valid id. An error wraps
// stead.ErrInvalid.
func CheckForget(groups []string) error {
	if len(groups) > MaxBatch {
		return check.Invalidf("forget of %d groups, more than %d", len(groups), MaxBatch)
	}
	for i, g := range groups {
		if err := check.ID("group", g); err != nil {
			return fmt.Errorf("group %d: %w", i, err)
		}
	}
	return nil
}

// Tokens is how many tokens a rate bucket of f holds at now, given it held tokens at at: the
// bucket refills continuously at Rate per Per, up to Rate. Every backend computes refills with it
// (or its SQL twin), so that they admit alike.
func (f Flow) Tokens(tokens float64, at, now time.Time) float64 {
	if f.Rate == 0 {
		return 0
	}
	if d := now.Sub(at); d > 0 {
		tokens += float64(f.Rate) * d.Seconds() / f.Per.Seconds()
	}
	return min(tokens, float64(f.Rate))
}

// TokenDue is when a bucket of f holding tokens (fewer than one) at now will hold one.
func (f Flow) TokenDue(tokens float64, now time.Time) time.Time {
	if tokens >= 1 || f.Rate == 0 {
		return now
	}
	need := (1 - tokens) * f.Per.Seconds() / float64(f.Rate)
	return now.Add(time.Duration(need*float64(time.Second)) + time.Microsecond).Truncate(time.Microsecond)
}
