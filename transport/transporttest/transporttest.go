package transporttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// Factory builds a fresh, empty transport whose time is clock(). The suite closes it.
type Factory func(t *testing.T, clock func() time.Time) *transport.Transport

// Start is where every scenario's clock starts.
var Start = time.Date(2026, 1, 1, 0, 1, 40, 0, time.UTC)

// Visibility is the lease the scenarios use unless they test leases.
const Visibility = 10 * time.Second

// Run runs every rule as a parallel subtest named group/rule (lower snake case, as in
// TestConformance/lease/stale_changes_nothing), each on a fresh transport.
func Run(t *testing.T, f Factory) {
	t.Helper()
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, r := range g.rules {
				t.Run(r.name, func(t *testing.T) {
					t.Parallel()
					r.run(t, f)
				})
			}
		})
	}
}

type rule struct {
	name string
	run  func(t *testing.T, f Factory)
}

type group struct {
	name  string
	rules []rule
}

// groups is the table of every rule, in the order they appear in the test output.
var groups = []group{
	{"order", []rule{
		{"fifo_within_group", testFIFO},
	}},
	{"lease", []rule{
		{"one_in_flight_per_group", testOneInFlight},
		{"expired_is_claimable_again", testExpiredLease},
		{"holds_until_its_end", testLeaseEndExclusive},
		{"stale_changes_nothing", testStaleLease},
		{"fields", testLeaseFields},
		{"until_in_utc_microseconds", testLeaseUntilNormalised},
	}},
	{"ack", []rule{
		{"removes_message_nack_returns_it", testAckRemovesNackReturns},
		{"after_expiry_without_reclaim_lands", testAckAfterExpiry},
	}},
	{"extend", []rule{
		{"keeps_the_group_held", testExtendHolds},
		{"stale_changes_nothing", testExtendStale},
		{"input_is_checked", testExtendInput},
	}},
	{"nack", []rule{
		{"returns_to_group_head", testNackReturnsToHead},
		{"delay_parks_group", testPark},
	}},
	{"fairness", []rule{
		{"served_group_yields", testRoundRobin},
		{"round_robin_across_groups", testFairRotation},
	}},
	{"priority", []rule{
		{"minimum_filters", testMinPriority},
		{"sticks_from_first_publish", testPrioritySticks},
		{"bounds", testPriorityBounds},
	}},
	{"batch", []rule{
		{"claim_one_per_group", testClaimBatch},
		{"claim_max_and_priority", testClaimBatchLimits},
		{"publish_keeps_order", testPublishBatchOrder},
		{"publish_all_or_nothing", testPublishBatchAtomic},
		{"ack_current_skips_stale", testAckBatch},
	}},
	{"event", []rule{
		{"round_trip", testEventRoundTrip},
		{"trace_context_round_trips", testEventTrace},
		{"created_at_in_utc_microseconds", testEventCreatedAtNormalised},
		{"created_at_within_years_1_to_9999", testEventTimeRange},
		{"empty_data_is_nil", testEmptyData},
	}},
	{"input", []rule{
		{"invalid_is_refused", testInvalidInput},
		{"visibility_bounds", testVisibilityBounds},
		{"delay_bounds", testDelayBounds},
	}},
	{"context", []rule{
		{"done_before_call_reaches_nothing", testContextDone},
	}},
	{"concurrency", []rule{
		{"claimers_never_share_a_group", testConcurrentClaimers},
	}},
	{"wait", []rule{
		{"wakes_on_publish", testWaitPublish},
		{"wakes_on_ack_that_frees_group", testWaitAck},
		{"honours_context", testWaitContext},
	}},
	{"flow", []rule{
		{"concurrency_bounds_admission", testFlowConcurrency},
		{"keys_are_independent", testFlowKeysIndependent},
		{"group_remembers_its_key", testFlowRemembersKey},
		{"ack_requeues_behind_the_key", testFlowAckRequeues},
		{"nack_park_and_expiry_keep_the_place", testFlowKeepsPlace},
		{"rate_bounds_admissions", testFlowRate},
		{"forget_frees_place_and_key", testFlowForget},
		{"latest_publish_sets_limits", testFlowLatestLimits},
		{"lowered_limit_binds_as_places_come_back", testFlowLoweredLimits},
		{"input_is_checked", testFlowInput},
		{"wait_wakes_on_admission", testFlowWaitWakes},
		{"racing_claimers_never_over_admit", testFlowRacingClaimers},
	}},
	{"close", []rule{
		{"calls_after_close_fail", testClosed},
	}},
}

// env is one scenario's transport and clock.
type env struct {
	t     *testing.T
	tr    *transport.Transport
	clock *Clock
	ctx   context.Context
}

func newEnv(t *testing.T, f Factory) *env {
	t.Helper()
	return newEnvAt(t, f, Start)
}

// newEnvAt is newEnv with the clock starting at start.
func newEnvAt(t *testing.T, f Factory, start time.Time) *env {
	t.Helper()
	c := NewClock(start)
	tr := f(t, c.Now)
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &env{t: t, tr: tr, clock: c, ctx: context.Background()}
}

// Event returns a test event with the given id.
func Event(id string) stead.Event {
	return stead.Event{ID: id, Kind: "ping", Data: json.RawMessage(`{"id":"` + id + `"}`)}
}

func (e *env) publish(group, id string, priority int) {
	e.t.Helper()
	if err := e.tr.Publish(e.ctx, group, Event(id), priority); err != nil {
		e.t.Fatalf("Publish(%s, %s): %v", group, id, err)
	}
}

func (e *env) claimMin(worker string, vis time.Duration, minPriority int) *transport.Lease {
	e.t.Helper()
	l, err := e.tr.Claim(e.ctx, worker, vis, minPriority)
	if err != nil {
		e.t.Fatalf("Claim(%s): %v", worker, err)
	}
	return l
}

// claimID claims and requires the event id want ("" for nothing claimable).
func (e *env) claimID(worker string, vis time.Duration, minPriority int, want string) *transport.Lease {
	e.t.Helper()
	l := e.claimMin(worker, vis, minPriority)
	switch {
	case want == "" && l != nil:
		e.t.Fatalf("Claim(%s) = %s of %s, want nothing", worker, l.Event.ID, l.Group)
	case want != "" && l == nil:
		e.t.Fatalf("Claim(%s) = nothing, want %s", worker, want)
	case want != "" && l.Event.ID != want:
		e.t.Fatalf("Claim(%s) = %s, want %s", worker, l.Event.ID, want)
	}
	return l
}

func (e *env) claim(want string) *transport.Lease {
	e.t.Helper()
	return e.claimID("w", Visibility, 0, want)
}

func (e *env) ack(l *transport.Lease) {
	e.t.Helper()
	if err := e.tr.Ack(e.ctx, l); err != nil {
		e.t.Fatalf("Ack(%s): %v", l.Event.ID, err)
	}
}

func (e *env) nack(l *transport.Lease, d time.Duration) {
	e.t.Helper()
	if err := e.tr.Nack(e.ctx, l, d); err != nil {
		e.t.Fatalf("Nack(%s, %v): %v", l.Event.ID, d, err)
	}
}

func testFIFO(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.publish("G", "e1", 0)
	e.publish("G", "e2", 0)
	e.publish("G", "e3", 0)
	for _, id := range []string{"e1", "e2", "e3"} {
		e.ack(e.claim(id))
	}
	e.claim("")
}

func testOneInFlight(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.publish("G", "g1", 0)
	e.publish("G", "g2", 0)
	e.publish("H", "h1", 0)
	g1 := e.claimID("w1", Visibility, 0, "g1")
	e.claimID("w2", Visibility, 0, "h1") // G is skipped: g1 is in flight
	e.claimID("w3", Visibility, 0, "")
	e.ack(g1)
	e.claimID("w3", Visibility, 0, "g2")
}

func testAckRemovesNackReturns(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.publish("G", "only", 0)
	e.nack(e.claim("only"), 0)
	e.ack(e.claim("only"))
	e.claim("")
}

func testNackReturnsToHead(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.publish("G", "e1", 0)
	e.publish("G", "e2", 0)
	e.nack(e.claim("e1"), 0)
	e.ack(e.claim("e1"))
	e.ack(e.claim("e2"))
}

func testPark(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.publish("G", "e1", 0)
	e.publish("G", "e2", 0)
	e.nack(e.claim("e1"), 5*time.Second)
	e.claim("") // parked: nothing of G is claimable, not even e2
	e.clock.Advance(5 * time.Second)
	e.claim("") // a park that ends exactly now still holds
	e.clock.Advance(time.Second)
	e.ack(e.claim("e1"))
	e.claim("e2")
}

func testExpiredLease(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.publish("G", "e1", 0)
	e.claimID("w1", 10*time.Second, 0, "e1")
	e.claimID("w2", 10*time.Second, 0, "")
	e.clock.Advance(11 * time.Second)
	e.claimID("w2", 10*time.Second, 0, "e1")
}

func testLeaseEndExclusive(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.publish("G", "e1", 0)
	e.claimID("w1", 10*time.Second, 0, "e1")
	e.clock.Advance(10 * time.Second)
	e.claimID("w2", 10*time.Second, 0, "")
	e.clock.Advance(time.Millisecond)
	e.claimID("w2", 10*time.Second, 0, "e1")
}

func testAckAfterExpiry(t *testing.T, f Factory) {
	// The lease ended but nobody claimed the group since: the token still holds it, so the ack
	// lands and the message is not delivered again.
	e := newEnv(t, f)
	e.publish("G", "e1", 0)
	l := e.claim("e1")
	e.clock.Advance(time.Minute)
	e.ack(l)
	e.claim("")
}

func testStaleLease(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.publish("G", "e1", 0)
	e.publish("G", "e2", 0)
	stale := e.claimID("w1", 10*time.Second, 0, "e1")
	e.clock.Advance(11 * time.Second)
	current := e.claimID("w2", 10*time.Second, 0, "e1")
	if current.Token == stale.Token {
		t.Fatalf("a new claim reused the token %q", stale.Token)
	}
	// The stale holder's ack, nack and park change nothing.
	e.ack(stale)
	e.nack(stale, 0)
	e.nack(stale, time.Hour)
	e.claimID("w3", 10*time.Second, 0, "") // G still held by w2
	e.ack(current)
	e.claimID("w3", 10*time.Second, 0, "e2")
}

func testRoundRobin(t *testing.T, f Factory) {
	e := newEnv(t, f)
	for i := range 5 {
		e.publish("A", fmt.Sprintf("a%d", i), 0)
	}
	e.publish("B", "b0", 0)
	e.clock.Advance(time.Second)
	a := e.claim("a0")
	e.clock.Advance(time.Second)
	e.ack(a)
	e.clock.Advance(time.Second)
	e.claim("b0") // a group just served yields to one never claimed
}

func testFairRotation(t *testing.T, f Factory) {
	e := newEnv(t, f)
	groups := []string{"A", "B", "C"}
	for i := range 3 {
		for _, g := range groups {
			e.publish(g, fmt.Sprintf("%s%d", g, i), 0)
		}
	}
	var order []string
	for range 9 {
		e.clock.Advance(time.Second)
		l := e.claimMin("w", Visibility, 0)
		if l == nil {
			t.Fatalf("nothing claimable after %v", order)
		}
		order = append(order, l.Event.ID)
		e.clock.Advance(time.Second)
		e.ack(l)
	}
	if got, want := strings.Join(order, " "), "A0 B0 C0 A1 B1 C1 A2 B2 C2"; got != want {
		t.Fatalf("service order %q, want %q", got, want)
	}
}

func testMinPriority(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.publish("lo", "l1", 0)
	e.publish("hi", "h1", 2)
	hi := e.claimID("w", Visibility, 2, "h1")
	if hi.Group != "hi" || hi.Priority != 2 {
		t.Fatalf("claim(min 2) = group %s priority %d, want hi 2", hi.Group, hi.Priority)
	}
	e.ack(hi)
	e.claimID("w", Visibility, 2, "")
	lo := e.claimID("w", Visibility, 0, "l1")
	if lo.Group != "lo" || lo.Priority != 0 {
		t.Fatalf("claim(min 0) = group %s priority %d, want lo 0", lo.Group, lo.Priority)
	}
}

func testPrioritySticks(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.publish("G", "e1", 1)
	e.publish("G", "e2", 5) // the group exists: its priority stays 1
	e.claimID("w", Visibility, 5, "")
	l := e.claimID("w", Visibility, 1, "e1")
	if l.Priority != 1 {
		t.Fatalf("priority %d, want 1", l.Priority)
	}
	e.ack(l)
	e.ack(e.claimID("w", Visibility, 1, "e2"))
	// Drained: the id starts afresh with the priority of its next first publish.
	e.publish("G", "e3", 5)
	l = e.claimID("w", Visibility, 5, "e3")
	if l.Priority != 5 {
		t.Fatalf("priority of a recycled group %d, want 5", l.Priority)
	}
}

func testClaimBatch(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.publish("A", "a0", 0)
	e.publish("A", "a1", 0)
	e.publish("B", "b0", 0)
	e.publish("C", "c0", 0)
	e.publish("C", "c1", 0)
	ls, err := e.tr.ClaimBatch(e.ctx, "w", Visibility, 0, 10)
	if err != nil {
		t.Fatalf("ClaimBatch: %v", err)
	}
	got := map[string]string{}
	for _, l := range ls {
		if prev, dup := got[l.Group]; dup {
			t.Fatalf("batch holds two messages of %s: %s and %s", l.Group, prev, l.Event.ID)
		}
		got[l.Group] = l.Event.ID
	}
	if want := map[string]string{"A": "a0", "B": "b0", "C": "c0"}; !equalMaps(got, want) {
		t.Fatalf("ClaimBatch = %v, want %v", got, want)
	}
	more, err := e.tr.ClaimBatch(e.ctx, "w2", Visibility, 0, 10)
	if err != nil || len(more) != 0 {
		t.Fatalf("second ClaimBatch = %d leases, %v; want none", len(more), err)
	}
	if err := e.tr.AckBatch(e.ctx, ls); err != nil {
		t.Fatalf("AckBatch: %v", err)
	}
	ls, err = e.tr.ClaimBatch(e.ctx, "w", Visibility, 0, 10)
	if err != nil {
		t.Fatalf("ClaimBatch: %v", err)
	}
	got = map[string]string{}
	for _, l := range ls {
		got[l.Group] = l.Event.ID
	}
	if want := map[string]string{"A": "a1", "C": "c1"}; !equalMaps(got, want) {
		t.Fatalf("ClaimBatch after ack = %v, want %v", got, want)
	}
}

func testClaimBatchLimits(t *testing.T, f Factory) {
	e := newEnv(t, f)
	for i := range 6 {
		e.publish(fmt.Sprintf("g%d", i), fmt.Sprintf("e%d", i), i%3)
	}
	ls, err := e.tr.ClaimBatch(e.ctx, "w", Visibility, 2, 10)
	if err != nil {
		t.Fatalf("ClaimBatch(min 2): %v", err)
	}
	if len(ls) != 2 {
		t.Fatalf("ClaimBatch(min 2) = %d leases, want 2", len(ls))
	}
	for _, l := range ls {
		if l.Priority < 2 {
			t.Fatalf("ClaimBatch(min 2) returned priority %d", l.Priority)
		}
	}
	ls, err = e.tr.ClaimBatch(e.ctx, "w", Visibility, 0, 3)
	if err != nil || len(ls) != 3 {
		t.Fatalf("ClaimBatch(max 3) = %d leases, %v; want 3", len(ls), err)
	}
	ls, err = e.tr.ClaimBatch(e.ctx, "w", Visibility, 0, 3)
	if err != nil || len(ls) != 1 {
		t.Fatalf("ClaimBatch(max 3) of the last = %d leases, %v; want 1", len(ls), err)
	}
}

func testPublishBatchOrder(t *testing.T, f Factory) {
	e := newEnv(t, f)
	var msgs []transport.Outgoing
	for i := range 4 {
		for _, g := range []string{"B", "A"} {
			msgs = append(msgs, transport.Outgoing{Group: g, Event: Event(fmt.Sprintf("%s%d", g, i))})
		}
	}
	if err := e.tr.PublishBatch(e.ctx, msgs); err != nil {
		t.Fatalf("PublishBatch: %v", err)
	}
	if err := e.tr.PublishBatch(e.ctx, nil); err != nil {
		t.Fatalf("PublishBatch(nil): %v", err)
	}
	for i := range 4 {
		for _, g := range []string{"A", "B"} {
			e.clock.Advance(time.Second)
			e.ack(e.claim(fmt.Sprintf("%s%d", g, i)))
		}
	}
	e.claim("")
}

func testPublishBatchAtomic(t *testing.T, f Factory) {
	e := newEnv(t, f)
	msgs := []transport.Outgoing{
		{Group: "A", Event: Event("a")},
		{Group: "B", Event: stead.Event{ID: "", Kind: "ping"}},
	}
	if err := e.tr.PublishBatch(e.ctx, msgs); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("PublishBatch with an invalid item = %v, want ErrInvalid", err)
	}
	e.claim("")
}

func testAckBatch(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.publish("A", "a0", 0)
	e.publish("A", "a1", 0)
	e.publish("B", "b0", 0)
	a := e.claimID("w1", time.Minute, 0, "a0")
	b := e.claimID("w1", 10*time.Second, 0, "b0")
	e.clock.Advance(11 * time.Second)
	b2 := e.claimID("w2", 10*time.Second, 0, "b0")
	// a still holds A; b is stale.
	if err := e.tr.AckBatch(e.ctx, []transport.Lease{*a, *b}); err != nil {
		t.Fatalf("AckBatch: %v", err)
	}
	if err := e.tr.AckBatch(e.ctx, nil); err != nil {
		t.Fatalf("AckBatch(nil): %v", err)
	}
	e.claimID("w3", 10*time.Second, 0, "a1")
	e.ack(b2)
	e.claimID("w3", 10*time.Second, 0, "")
}

func testLeaseFields(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.publish("G", "e1", 3)
	e.publish("H", "h1", 0)
	l := e.claimID("w", 7*time.Second, 0, "e1")
	if l.Group != "G" || l.Priority != 3 || l.Token == "" {
		t.Fatalf("lease = group %q priority %d token %q", l.Group, l.Priority, l.Token)
	}
	if want := Start.Add(7 * time.Second); !l.Until.Equal(want) {
		t.Fatalf("Until = %v, want %v", l.Until, want)
	}
	h := e.claimID("w", 7*time.Second, 0, "h1")
	if h.Seq <= l.Seq {
		t.Fatalf("seq of a later publish %d, not above %d", h.Seq, l.Seq)
	}
	if h.Token == l.Token {
		t.Fatalf("two claims share the token %q", l.Token)
	}
	e.ack(l)
	e.ack(h)
	e.publish("G", "e2", 0)
	n := e.claim("e2")
	if n.Seq <= h.Seq {
		t.Fatalf("seq %d after acks reuses or goes below %d", n.Seq, h.Seq)
	}
}

func testEventRoundTrip(t *testing.T, f Factory) {
	e := newEnv(t, f)
	want := stead.Event{
		ID:        "évé-1",
		Kind:      "order.paid",
		Data:      json.RawMessage(`{"amount":12.5,"items":["a","b"],"note":"ünïcode ✓"}`),
		CreatedAt: time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC),
	}
	if err := e.tr.Publish(e.ctx, "exé/1", want, 0); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	bare := stead.Event{ID: "bare", Kind: "tick"}
	if err := e.tr.Publish(e.ctx, "exé/1", bare, 0); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	for _, w := range []stead.Event{want, bare} {
		l := e.claim(w.ID)
		if l.Group != "exé/1" || l.Event.Kind != w.Kind || !bytes.Equal(l.Event.Data, w.Data) || !l.Event.CreatedAt.Equal(w.CreatedAt) {
			t.Fatalf("event came back as %+v (group %q), want %+v", l.Event, l.Group, w)
		}
		e.ack(l)
	}
}

// testEventTrace holds a backend to keep the W3C trace context an event carries, byte for byte,
// so that a step on another host joins the sender's trace; an event without one stays without.
func testEventTrace(t *testing.T, f Factory) {
	e := newEnv(t, f)
	traced := Event("traced")
	traced.Trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01;congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
	if err := e.tr.PublishBatch(e.ctx, []transport.Outgoing{{Group: "G", Event: traced}, {Group: "G", Event: Event("plain")}}); err != nil {
		t.Fatalf("PublishBatch: %v", err)
	}
	for _, want := range []stead.Event{traced, Event("plain")} {
		l := e.claim(want.ID)
		if l.Event.Trace != want.Trace {
			t.Fatalf("event %q came back with trace %q, want %q", want.ID, l.Event.Trace, want.Trace)
		}
		e.ack(l)
	}
}

func testInvalidInput(t *testing.T, f Factory) {
	e := newEnv(t, f)
	good := Event("ok")
	big := stead.Event{ID: "big", Kind: "k", Data: json.RawMessage(`"` + strings.Repeat("x", stead.MaxPayload) + `"`)}
	lease := &transport.Lease{Message: transport.Message{Group: "G", Seq: 1}, Token: "w:1"}
	tests := []struct {
		name string
		call func() error
	}{
		{"empty_group", func() error { return e.tr.Publish(e.ctx, "", good, 0) }},
		{"nul_in_group", func() error { return e.tr.Publish(e.ctx, "a\x00b", good, 0) }},
		{"invalid_utf8_group", func() error { return e.tr.Publish(e.ctx, "a\xffb", good, 0) }},
		{"oversized_group", func() error { return e.tr.Publish(e.ctx, strings.Repeat("g", stead.MaxIDLen+1), good, 0) }},
		{"empty_event_id", func() error { return e.tr.Publish(e.ctx, "G", stead.Event{Kind: "k"}, 0) }},
		{"empty_event_kind", func() error { return e.tr.Publish(e.ctx, "G", stead.Event{ID: "e"}, 0) }},
		{"nul_in_event_id", func() error { return e.tr.Publish(e.ctx, "G", stead.Event{ID: "e\x00", Kind: "k"}, 0) }},
		{"invalid_json_data", func() error {
			return e.tr.Publish(e.ctx, "G", stead.Event{ID: "e", Kind: "k", Data: json.RawMessage(`{`)}, 0)
		}},
		{"nul_escape_in_data", func() error {
			return e.tr.Publish(e.ctx, "G", stead.Event{ID: "e", Kind: "k", Data: json.RawMessage(`"\u0000"`)}, 0)
		}},
		{"oversized_data", func() error { return e.tr.Publish(e.ctx, "G", big, 0) }},
		{"oversized_trace", func() error {
			return e.tr.Publish(e.ctx, "G", stead.Event{ID: "e", Kind: "k", Trace: strings.Repeat("0", stead.MaxTraceLen+1)}, 0)
		}},
		{"control_byte_in_trace", func() error {
			return e.tr.Publish(e.ctx, "G", stead.Event{ID: "e", Kind: "k", Trace: "00-\r\n"}, 0)
		}},
		{"negative_priority", func() error { return e.tr.Publish(e.ctx, "G", good, -1) }},
		{"priority_above_max", func() error { return e.tr.Publish(e.ctx, "G", good, transport.MaxPriority+1) }},
		{"publish_batch_above_max", func() error {
			return e.tr.PublishBatch(e.ctx, make([]transport.Outgoing, transport.MaxBatch+1))
		}},
		{"empty_worker", func() error { _, err := e.tr.Claim(e.ctx, "", Visibility, 0); return err }},
		{"zero_visibility", func() error { _, err := e.tr.Claim(e.ctx, "w", 0, 0); return err }},
		{"negative_visibility", func() error { _, err := e.tr.Claim(e.ctx, "w", -time.Second, 0); return err }},
		{"huge_visibility", func() error { _, err := e.tr.Claim(e.ctx, "w", 100*365*24*time.Hour, 0); return err }},
		{"negative_min_priority", func() error { _, err := e.tr.Claim(e.ctx, "w", Visibility, -1); return err }},
		{"claim_of_none", func() error { _, err := e.tr.ClaimBatch(e.ctx, "w", Visibility, 0, 0); return err }},
		{"claim_of_negative", func() error { _, err := e.tr.ClaimBatch(e.ctx, "w", Visibility, 0, -5); return err }},
		{"claim_above_max", func() error { _, err := e.tr.ClaimBatch(e.ctx, "w", Visibility, 0, 1<<30); return err }},
		{"ack_of_nil_lease", func() error { return e.tr.Ack(e.ctx, nil) }},
		{"nack_of_nil_lease", func() error { return e.tr.Nack(e.ctx, nil, 0) }},
		{"lease_without_token", func() error {
			return e.tr.Ack(e.ctx, &transport.Lease{Message: transport.Message{Group: "G"}})
		}},
		{"lease_without_group", func() error { return e.tr.Ack(e.ctx, &transport.Lease{Token: "w:1"}) }},
		{"ack_batch_lease_with_nul", func() error {
			return e.tr.AckBatch(e.ctx, []transport.Lease{{Message: transport.Message{Group: "G\x00"}, Token: "w:1"}})
		}},
		{"negative_nack_delay", func() error { return e.tr.Nack(e.ctx, lease, -time.Second) }},
		{"ack_batch_above_max", func() error {
			return e.tr.AckBatch(e.ctx, make([]transport.Lease, transport.MaxBatch+1))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, stead.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
	e.claim("") // nothing was written
}

func testConcurrentClaimers(t *testing.T, f Factory) {
	e := newEnv(t, f)
	const groups, perGroup, workers = 12, 8, 6
	var msgs []transport.Outgoing
	for i := range perGroup {
		for g := range groups {
			msgs = append(msgs, transport.Outgoing{Group: fmt.Sprintf("g%02d", g), Event: Event(fmt.Sprintf("g%02d-%d", g, i))})
		}
	}
	if err := e.tr.PublishBatch(e.ctx, msgs); err != nil {
		t.Fatalf("PublishBatch: %v", err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()

	var mu sync.Mutex
	inFlight := map[string]string{} // group -> worker
	seen := map[string]int{}        // event id -> deliveries
	next := map[string]int{}        // group -> next expected index
	done := 0
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("w%d", w)
			for {
				mu.Lock()
				finished := done >= groups*perGroup
				mu.Unlock()
				if finished {
					return
				}
				var ls []transport.Lease
				var err error
				if w%2 == 0 {
					ls, err = e.tr.ClaimBatch(ctx, name, time.Hour, 0, 3)
				} else {
					var l *transport.Lease
					if l, err = e.tr.Claim(ctx, name, time.Hour, 0); l != nil {
						ls = []transport.Lease{*l}
					}
				}
				if err != nil {
					errc <- fmt.Errorf("%s claim: %w", name, err)
					return
				}
				if len(ls) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				mu.Lock()
				for _, l := range ls {
					if other, busy := inFlight[l.Group]; busy {
						mu.Unlock()
						errc <- fmt.Errorf("%s got %s while %s holds %s", name, l.Event.ID, other, l.Group)
						return
					}
					inFlight[l.Group] = name
					seen[l.Event.ID]++
					if want := fmt.Sprintf("%s-%d", l.Group, next[l.Group]); l.Event.ID != want {
						mu.Unlock()
						errc <- fmt.Errorf("%s got %s, want %s (FIFO)", name, l.Event.ID, want)
						return
					}
					next[l.Group]++
				}
				// Leave the in-flight set before the ack lands: after it the group is claimable.
				for _, l := range ls {
					delete(inFlight, l.Group)
				}
				mu.Unlock()
				if err := e.tr.AckBatch(ctx, ls); err != nil {
					errc <- fmt.Errorf("%s ack: %w", name, err)
					return
				}
				mu.Lock()
				done += len(ls)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if n := seen[m.Event.ID]; n != 1 {
			t.Errorf("%s delivered %d times, want once", m.Event.ID, n)
		}
	}
	e.claim("")
}

// waitReturns runs Wait in the background and returns a channel with its result.
func waitReturns(e *env) <-chan error {
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	e.t.Cleanup(cancel)
	res := make(chan error, 1)
	go func() { res <- e.tr.Wait(ctx) }()
	return res
}

func testWaitPublish(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.claim("") // the worker looked and found nothing
	res := waitReturns(e)
	e.publish("G", "e1", 0)
	if err := <-res; err != nil {
		t.Fatalf("Wait = %v after a publish", err)
	}
	e.claim("e1")
}

func testWaitAck(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.publish("G", "e1", 0)
	e.publish("G", "e2", 0)
	l := e.claimID("w1", Visibility, 0, "e1")
	e.claimID("w2", Visibility, 0, "")
	res := waitReturns(e)
	e.ack(l)
	if err := <-res; err != nil {
		t.Fatalf("Wait = %v after an ack that freed a group", err)
	}
	e.claimID("w2", Visibility, 0, "e2")
}

func testWaitContext(t *testing.T, f Factory) {
	e := newEnv(t, f)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if err := e.tr.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait(cancelled) = %v, want context.Canceled", err)
	}
	// A waiter blocked with nothing happening returns when its context ends (or earlier, which
	// the contract allows, but then without an error).
	ctx, cancel = context.WithTimeout(e.ctx, 20*time.Millisecond)
	defer cancel()
	if err := e.tr.Wait(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v, want nil or DeadlineExceeded", err)
	}
}

func testClosed(t *testing.T, f Factory) {
	c := NewClock(Start)
	tr := f(t, c.Now)
	ctx := context.Background()
	if err := tr.Publish(ctx, "G", Event("e1"), 0); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if err := tr.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := tr.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	lease := &transport.Lease{Message: transport.Message{Group: "G", Seq: 1}, Token: "w:1"}
	calls := map[string]func() error{
		"Publish":      func() error { return tr.Publish(ctx, "G", Event("e2"), 0) },
		"PublishBatch": func() error { return tr.PublishBatch(ctx, []transport.Outgoing{{Group: "G", Event: Event("e3")}}) },
		"Claim":        func() error { _, err := tr.Claim(ctx, "w", Visibility, 0); return err },
		"ClaimBatch":   func() error { _, err := tr.ClaimBatch(ctx, "w", Visibility, 0, 5); return err },
		"Ack":          func() error { return tr.Ack(ctx, lease) },
		"AckBatch":     func() error { return tr.AckBatch(ctx, []transport.Lease{*lease}) },
		"Nack":         func() error { return tr.Nack(ctx, lease, 0) },
		"Extend":       func() error { _, err := tr.Extend(ctx, []transport.Lease{*lease}, Visibility); return err },
		"Wait":         func() error { return tr.Wait(ctx) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, stead.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// extend extends ls by vis and requires the count want; a backend without Extender skips.
func (e *env) extend(ls []transport.Lease, vis time.Duration, want int) {
	e.t.Helper()
	if !e.tr.CanExtend() {
		e.t.Skip("the backend does not implement transport.Extender")
	}
	n, err := e.tr.Extend(e.ctx, ls, vis)
	if err != nil || n != want {
		e.t.Fatalf("Extend = %d, %v; want %d", n, err, want)
	}
}

func testExtendHolds(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.publish("G", "g1", 0)
	e.publish("H", "h1", 0)
	g := e.claimID("w1", 10*time.Second, 0, "g1")
	e.clock.Advance(8 * time.Second)
	e.extend([]transport.Lease{*g}, 10*time.Second, 1) // now until Start+18s
	e.clock.Advance(9 * time.Second)                   // past the claim's own end
	h := e.claimID("w2", 10*time.Second, 0, "h1")      // H is free; G is still held
	e.claimID("w2", 10*time.Second, 0, "")
	e.clock.Advance(time.Second) // the extended lease ends exactly now: it still holds
	e.claimID("w2", 10*time.Second, 0, "")
	e.clock.Advance(time.Millisecond)
	e.claimID("w2", 10*time.Second, 0, "g1")
	// A lease that ended unclaimed is still its token's, as for Ack: it extends.
	e.clock.Advance(time.Minute)
	e.extend([]transport.Lease{*h}, 10*time.Second, 1)
	e.claimID("w3", 10*time.Second, 0, "g1") // w2's lease of G ended unextended
	e.claimID("w3", 10*time.Second, 0, "")   // H is held again
	e.ack(h)
}

func testExtendStale(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.publish("G", "g1", 0)
	e.publish("G", "g2", 0)
	e.publish("H", "h1", 0)
	stale := e.claimID("w1", 10*time.Second, 0, "g1")
	acked := e.claimID("w3", 10*time.Second, 0, "h1")
	e.ack(acked)
	e.clock.Advance(11 * time.Second)
	e.claimID("w2", 10*time.Second, 0, "g1") // the current holder, never acked
	// The stale lease and the acked one extend nothing; the current holder's lease is as it was.
	e.extend([]transport.Lease{*stale, *acked}, time.Hour, 0)
	e.clock.Advance(10*time.Second + time.Millisecond)
	next := e.claimID("w4", 10*time.Second, 0, "g1")
	e.ack(next)
	e.claimID("w4", 10*time.Second, 0, "g2")
}

func testExtendInput(t *testing.T, f Factory) {
	e := newEnv(t, f)
	if !e.tr.CanExtend() {
		if _, err := e.tr.Extend(e.ctx, nil, Visibility); !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("Extend without an Extender = %v, want ErrUnsupported", err)
		}
		t.Skip("the backend does not implement transport.Extender")
	}
	l := transport.Lease{Message: transport.Message{Group: "G", Seq: 1}, Token: "w:1"}
	for name, call := range map[string]func() error{
		"zero_visibility": func() error { _, err := e.tr.Extend(e.ctx, []transport.Lease{l}, 0); return err },
		"over_max": func() error {
			_, err := e.tr.Extend(e.ctx, []transport.Lease{l}, transport.MaxVisibility+1)
			return err
		},
		"no_token": func() error {
			_, err := e.tr.Extend(e.ctx, []transport.Lease{{Message: l.Message}}, Visibility)
			return err
		},
		"too_many": func() error {
			_, err := e.tr.Extend(e.ctx, make([]transport.Lease, transport.MaxBatch+1), Visibility)
			return err
		},
	} {
		if err := call(); !errors.Is(err, stead.ErrInvalid) {
			t.Errorf("%s: Extend = %v, want ErrInvalid", name, err)
		}
	}
	if n, err := e.tr.Extend(e.ctx, nil, Visibility); n != 0 || err != nil {
		t.Fatalf("Extend of no lease = %d, %v", n, err)
	}
}
