package transporttest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// The flow rules: how keyed groups are admitted (transport.Flow, transport.Limiter).

// limiting returns the scenario's env, or nil after checking that a transport without flows
// refuses a keyed publish, which is the whole rule for it.
func limiting(t *testing.T, f Factory) *env {
	t.Helper()
	e := newEnv(t, f)
	if e.tr.CanLimit() {
		return e
	}
	err := e.tr.PublishBatch(e.ctx, []transport.Outgoing{{Group: "G", Event: Event("g"), Flow: transport.Flow{Key: "k", Concurrency: 1}}})
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("keyed publish on a transport without flows = %v, want ErrUnsupported", err)
	}
	e.claim("")
	return nil
}

func (e *env) publishFlow(group, id string, fl transport.Flow) {
	e.t.Helper()
	if err := e.tr.PublishBatch(e.ctx, []transport.Outgoing{{Group: group, Event: Event(id), Flow: fl}}); err != nil {
		e.t.Fatalf("Publish(%s, %s, %+v): %v", group, id, fl, err)
	}
}

// claimIDs claims up to max messages and requires exactly the event ids want, in any order.
func (e *env) claimIDs(worker string, max int, want ...string) []transport.Lease {
	e.t.Helper()
	ls, err := e.tr.ClaimBatch(e.ctx, worker, Visibility, 0, max)
	if err != nil {
		e.t.Fatalf("ClaimBatch(%s, %d): %v", worker, max, err)
	}
	got := make([]string, len(ls))
	for i := range ls {
		got[i] = ls[i].Event.ID
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		e.t.Fatalf("ClaimBatch(%s, %d) = %v, want %v", worker, max, got, want)
	}
	return ls
}

func (e *env) flowState(key string, admitted, waiting int) transport.FlowState {
	e.t.Helper()
	st, err := e.tr.FlowState(e.ctx, key)
	if err != nil {
		e.t.Fatalf("FlowState(%s): %v", key, err)
	}
	if st.Key != key || st.Admitted != admitted || st.Waiting != waiting {
		e.t.Fatalf("FlowState(%s) = key %q, %d admitted, %d waiting; want %d admitted, %d waiting",
			key, st.Key, st.Admitted, st.Waiting, admitted, waiting)
	}
	return st
}

func (e *env) forget(groups ...string) {
	e.t.Helper()
	if err := e.tr.Forget(e.ctx, groups); err != nil {
		e.t.Fatalf("Forget(%v): %v", groups, err)
	}
}

func testFlowConcurrency(t *testing.T, f Factory) {
	e := limiting(t, f)
	if e == nil {
		return
	}
	fl := transport.Flow{Key: "k", Concurrency: 2}
	for i := 1; i <= 5; i++ {
		e.publishFlow(fmt.Sprintf("g%d", i), fmt.Sprintf("e%d", i), fl)
	}
	e.flowState("k", 2, 3)
	ls := e.claimIDs("w", 10, "e1", "e2") // oldest first, two at most
	e.claimIDs("w", 10)
	e.ack(&ls[0])
	e.flowState("k", 2, 2)
	more := e.claimIDs("w", 10, "e3")
	e.ack(&ls[1])
	e.ack(&more[0])
	for _, l := range e.claimIDs("w", 10, "e4", "e5") {
		e.ack(&l)
	}
	st := e.flowState("k", 0, 0)
	if st.Concurrency != 2 || st.Rate != 0 {
		t.Fatalf("FlowState(k) limits = %+v, want concurrency 2", st.Flow)
	}
	unknown := e.flowState("nobody", 0, 0)
	if unknown.Concurrency != 0 {
		t.Fatalf("FlowState of an unknown key = %+v", unknown)
	}
}

func testFlowKeysIndependent(t *testing.T, f Factory) {
	e := limiting(t, f)
	if e == nil {
		return
	}
	for i := range 20 {
		e.publishFlow(fmt.Sprintf("a%02d", i), fmt.Sprintf("a%02d", i), transport.Flow{Key: "busy", Concurrency: 1})
	}
	e.publishFlow("b0", "b0", transport.Flow{Key: "quiet", Concurrency: 1})
	e.publish("u", "u", 0)
	// The busy key's nineteen waiting groups take no place in the claim order.
	e.claimIDs("w", 10, "a00", "b0", "u")
	e.flowState("busy", 1, 19)
	e.flowState("quiet", 1, 0)
}

func testFlowRemembersKey(t *testing.T, f Factory) {
	e := limiting(t, f)
	if e == nil {
		return
	}
	fl := transport.Flow{Key: "k", Concurrency: 1}
	e.publishFlow("G", "g1", fl)
	e.ack(e.claim("g1")) // G is empty now and goes
	e.publishFlow("H", "h1", fl)
	e.publish("G", "g2", 0)                                                // no flow named: G keeps k
	e.publishFlow("G", "g3", transport.Flow{Key: "other", Concurrency: 5}) // another key: G keeps k
	ls := e.claimIDs("w", 10, "h1")
	e.flowState("k", 1, 1)
	e.ack(&ls[0])
	e.ack(e.claim("g2"))
	e.ack(e.claim("g3"))
	e.claim("")
}

func testFlowAckRequeues(t *testing.T, f Factory) {
	e := limiting(t, f)
	if e == nil {
		return
	}
	fl := transport.Flow{Key: "k", Concurrency: 1}
	e.publishFlow("G", "g1", fl)
	e.publishFlow("G", "g2", fl)
	e.publishFlow("H", "h1", fl)
	e.ack(e.claim("g1")) // G still has g2: it queues behind H
	e.ack(e.claim("h1"))
	e.ack(e.claim("g2"))
	e.claim("")
	e.flowState("k", 0, 0)
}

func testFlowKeepsPlace(t *testing.T, f Factory) {
	e := limiting(t, f)
	if e == nil {
		return
	}
	fl := transport.Flow{Key: "k", Concurrency: 1}
	e.publishFlow("G", "g1", fl)
	e.publishFlow("H", "h1", fl)
	e.nack(e.claim("g1"), 0) // a nack keeps G admitted
	e.nack(e.claim("g1"), 5*time.Second)
	e.claim("") // G is parked and keeps its place: H still waits
	e.flowState("k", 1, 1)
	e.clock.Advance(6 * time.Second)
	e.claimID("w1", Visibility, 0, "g1")
	e.clock.Advance(Visibility + time.Second)
	l := e.claimID("w2", Visibility, 0, "g1") // the lease ended: another claimer takes G's place over
	e.claimID("w3", Visibility, 0, "")
	e.ack(l)
	e.claim("h1")
}

func testFlowRate(t *testing.T, f Factory) {
	e := limiting(t, f)
	if e == nil {
		return
	}
	fl := transport.Flow{Key: "k", Rate: 2, Per: time.Second}
	for i := 1; i <= 5; i++ {
		e.publishFlow(fmt.Sprintf("g%d", i), fmt.Sprintf("e%d", i), fl)
	}
	ls := e.claimIDs("w", 10, "e1", "e2") // the bucket starts full
	for i := range ls {
		e.ack(&ls[i])
	}
	e.claimIDs("w", 10) // empty until a token is due: one every half second
	e.clock.Advance(499 * time.Millisecond)
	e.claimIDs("w", 10)
	e.clock.Advance(2 * time.Millisecond)
	e.claimIDs("w", 10, "e3")
	e.clock.Advance(10 * time.Second) // the bucket holds no more than the rate
	e.claimIDs("w", 10, "e4", "e5")
	e.flowState("k", 3, 0)
}

func testFlowForget(t *testing.T, f Factory) {
	e := limiting(t, f)
	if e == nil {
		return
	}
	fl := transport.Flow{Key: "k", Concurrency: 1}
	e.publishFlow("G", "g1", fl)
	e.publishFlow("H", "h1", fl)
	g := e.claim("g1")
	e.forget("H") // waiting: claimable at once, unlimited
	e.claim("h1")
	e.flowState("k", 1, 0)
	e.forget("G", "unknown") // admitted: gives its place back
	e.flowState("k", 0, 0)
	e.publishFlow("J", "j1", fl)
	e.claim("j1")
	e.ack(g)
	e.publish("G", "g2", 0) // forgotten: G is unlimited now, though J holds k's only place
	e.claim("g2")
	e.flowState("k", 1, 0)
}

func testFlowLatestLimits(t *testing.T, f Factory) {
	e := limiting(t, f)
	if e == nil {
		return
	}
	for i := 1; i <= 3; i++ {
		e.publishFlow(fmt.Sprintf("g%d", i), fmt.Sprintf("e%d", i), transport.Flow{Key: "k", Concurrency: 1})
	}
	e.claimIDs("w", 10, "e1")
	e.publishFlow("g4", "e4", transport.Flow{Key: "k", Concurrency: 3}) // raised: admits two more
	e.claimIDs("w", 10, "e2", "e3")
	st := e.flowState("k", 3, 1)
	if st.Concurrency != 3 {
		t.Fatalf("FlowState(k).Concurrency = %d, want 3", st.Concurrency)
	}
}

func testFlowLoweredLimits(t *testing.T, f Factory) {
	e := limiting(t, f)
	if e == nil {
		return
	}
	wide := transport.Flow{Key: "k", Concurrency: 3}
	for _, g := range []string{"a", "b", "c"} {
		e.publishFlow(g, g+"1", wide)
		e.publishFlow(g, g+"2", wide)
	}
	ls := e.claimIDs("w", 10, "a1", "b1", "c1")
	// Lowered to one while three are admitted: none keeps its place through its ack until the
	// key is back within one.
	e.publishFlow("a", "a3", transport.Flow{Key: "k", Concurrency: 1})
	e.ack(&ls[0])
	e.ack(&ls[1])
	e.claimIDs("w", 10)
	e.ack(&ls[2])
	e.flowState("k", 1, 2)
	l := e.claimIDs("w", 10, "a2")
	e.ack(&l[0])
	e.claimIDs("w", 10, "b2")
}

func testFlowInput(t *testing.T, f Factory) {
	e := newEnv(t, f)
	long := strings.Repeat("k", 513)
	bad := []transport.Flow{
		{Concurrency: 1},
		{Rate: 1, Per: time.Second},
		{Key: "a\x00b", Concurrency: 1},
		{Key: "\xff", Concurrency: 1},
		{Key: long, Concurrency: 1},
		{Key: "k", Concurrency: -1},
		{Key: "k", Concurrency: transport.MaxConcurrency + 1},
		{Key: "k", Rate: -1, Per: time.Second},
		{Key: "k", Rate: transport.MaxRate + 1, Per: time.Second},
		{Key: "k", Rate: 1},
		{Key: "k", Per: time.Second},
		{Key: "k", Rate: 1, Per: -time.Second},
		{Key: "k", Rate: 1, Per: transport.MaxPer + time.Second},
		{Key: "k", Rate: 1, Per: time.Nanosecond},
	}
	for _, fl := range bad {
		msgs := []transport.Outgoing{
			{Group: "ok", Event: Event("ok")},
			{Group: "G", Event: Event("g"), Flow: fl},
		}
		if err := e.tr.PublishBatch(e.ctx, msgs); !errors.Is(err, stead.ErrInvalid) {
			t.Errorf("PublishBatch with flow %+v = %v, want ErrInvalid", fl, err)
		}
	}
	e.claim("") // nothing of any refused batch was written
	for _, groups := range [][]string{{""}, {"a\x00"}, {"\xff"}, {long}, make([]string, transport.MaxBatch+1)} {
		if err := e.tr.Forget(e.ctx, groups); !errors.Is(err, stead.ErrInvalid) {
			t.Errorf("Forget(%d groups) = %v, want ErrInvalid", len(groups), err)
		}
	}
	for _, key := range []string{"", "a\x00", "\xff", long} {
		if _, err := e.tr.FlowState(e.ctx, key); !errors.Is(err, stead.ErrInvalid) {
			t.Errorf("FlowState(%q) = %v, want ErrInvalid", key, err)
		}
	}
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if err := e.tr.Forget(ctx, []string{"G"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Forget with a cancelled context = %v, want context.Canceled", err)
	}
}

func testFlowWaitWakes(t *testing.T, f Factory) {
	e := limiting(t, f)
	if e == nil {
		return
	}
	fl := transport.Flow{Key: "k", Concurrency: 1}
	e.publishFlow("G", "g1", fl)
	e.publishFlow("H", "h1", fl)
	g := e.claim("g1")
	e.claim("")
	woke := make(chan error, 1)
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	go func() { woke <- e.tr.Wait(ctx) }()
	time.Sleep(20 * time.Millisecond)
	e.ack(g) // frees k's place: H is admitted and claimable
	if err := <-woke; err != nil {
		t.Fatalf("Wait after the ack that admitted H: %v", err)
	}
	e.claim("h1")
}

// testFlowRacingClaimers runs claimers side by side over groups of a few keys and fails if a key
// ever has more leases out than its limit, or a message is lost, doubled or out of order.
func testFlowRacingClaimers(t *testing.T, f Factory) {
	e := limiting(t, f)
	if e == nil {
		return
	}
	const keys, groupsPerKey, perGroup, limit = 3, 8, 3, 2
	var msgs []transport.Outgoing
	for i := range perGroup {
		for k := range keys {
			for g := range groupsPerKey {
				grp := fmt.Sprintf("k%d-g%d", k, g)
				msgs = append(msgs, transport.Outgoing{Group: grp, Event: Event(fmt.Sprintf("%s-%d", grp, i)),
					Flow: transport.Flow{Key: fmt.Sprintf("k%d", k), Concurrency: limit}})
			}
		}
	}
	if err := e.tr.PublishBatch(e.ctx, msgs); err != nil {
		t.Fatalf("PublishBatch: %v", err)
	}
	RaceFlow(t, limit, len(msgs),
		Claimer{T: e.tr, Max: 4}, Claimer{T: e.tr, Max: 1}, Claimer{T: e.tr, Max: 8})
}

// RaceFlow runs claimers side by side until total messages were acked, and fails t if a key (the
// group's name up to its first '-') ever has more than limit leases out at once, or a group's
// messages arrive out of order (ids "<group>-<n>", n from 0) or twice. Transports that share one
// database, as processes would, race through it: pass a claimer per transport. The messages must
// be published before.
func RaceFlow(t *testing.T, limit, total int, claimers ...Claimer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu       sync.Mutex
		out      = map[string]int{} // key -> leases out
		next     = map[string]int{} // group -> next message index
		done     int
		worst    int
		wg       sync.WaitGroup
		failOnce sync.Once
		failed   error
	)
	fail := func(err error) { failOnce.Do(func() { failed = err; cancel() }) }
	keyOf := func(group string) string { k, _, _ := strings.Cut(group, "-"); return k }
	run := func(w int, c Claimer) error {
		name := fmt.Sprintf("w%d", w)
		for {
			mu.Lock()
			finished := done >= total
			mu.Unlock()
			if finished {
				return nil
			}
			ls, err := c.T.ClaimBatch(ctx, name, time.Minute, 0, c.Max)
			if err != nil {
				return fmt.Errorf("%s claim: %w", name, err)
			}
			mu.Lock()
			for _, l := range ls {
				k := keyOf(l.Group)
				out[k]++
				worst = max(worst, out[k])
				if out[k] > limit {
					mu.Unlock()
					return fmt.Errorf("%s: key %s has %d leases out, limit %d", name, k, out[k], limit)
				}
				if want := fmt.Sprintf("%s-%d", l.Group, next[l.Group]); l.Event.ID != want {
					mu.Unlock()
					return fmt.Errorf("%s: got %s, want %s", name, l.Event.ID, want)
				}
				next[l.Group]++
			}
			mu.Unlock()
			if len(ls) == 0 {
				time.Sleep(time.Millisecond)
				continue
			}
			time.Sleep(time.Millisecond) // hold the leases a moment, as a step would
			// Leave the count before the ack lands: after it the transport admits another.
			mu.Lock()
			for _, l := range ls {
				out[keyOf(l.Group)]--
			}
			mu.Unlock()
			if err := c.T.AckBatch(ctx, ls); err != nil {
				return fmt.Errorf("%s ack: %w", name, err)
			}
			mu.Lock()
			done += len(ls)
			mu.Unlock()
		}
	}
	for w, c := range claimers {
		wg.Go(func() {
			if err := run(w, c); err != nil {
				fail(err)
			}
		})
	}
	wg.Wait()
	if failed != nil {
		t.Fatal(failed)
	}
	if worst != limit {
		t.Errorf("at most %d leases of a key were out at once, want the limit %d reached", worst, limit)
	}
}
