package steadtest_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/steadtest"
	"github.com/steadhq/stead/worker"
)

const checkout = `
id: checkout
initial: cart
states:
  cart:
    on: {checkout: paying}
  paying:
    entry: [charge]
    on_error: {target: declined}
    on: {ship: shipped}
  shipped: {final: success}
  declined: {final: failure}
retry:
  charge: {attempts: 3, backoff: 1m, factor: 2}
`

// failing returns an action that fails its first n calls, then sets charged.
func failing(n int64) chart.Action {
	var calls atomic.Int64
	return func(c chart.ActionContext) (chart.ActionResult, error) {
		if calls.Add(1) <= n {
			return chart.ActionResult{}, errors.New("card network timed out")
		}
		c.SetBool("charged", true)
		return chart.ActionResult{}, nil
	}
}

func TestRetryBackoffFiresAtEachDelay(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		failures int64
		state    string
		attempts []time.Duration // when each attempt ran, after the checkout
	}{
		{"first attempt succeeds", 0, "paying", []time.Duration{0}},
		{"third attempt succeeds", 2, "paying", []time.Duration{0, time.Minute, 3 * time.Minute}},
		{"every attempt fails", 3, "declined", []time.Duration{0, time.Minute, 3 * time.Minute}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := steadtest.New(t).Action("charge", failing(tc.failures)).DefineYAML("checkout.yaml", checkout)
			k.Create("checkout", "o-1", nil)
			t0 := k.Now()
			k.Send("o-1", "checkout", nil)
			if tc.failures > 0 {
				// The failed attempt is discarded: the execution waits in cart for the backoff.
				k.AssertState("o-1", "cart")
				k.Advance(time.Minute - time.Microsecond)
				k.AssertCalls("charge", 1)
			}
			k.Advance(time.Hour)
			k.AssertState("o-1", tc.state)
			calls := k.Calls("charge")
			if len(calls) != len(tc.attempts) {
				t.Fatalf("charge ran %d times, want %d", len(calls), len(tc.attempts))
			}
			for i, c := range calls {
				if c.Attempt != i+1 || c.Key != calls[0].Key || !c.At.Equal(t0.Add(tc.attempts[i])) {
					t.Errorf("call %d: attempt %d key %q at +%v; want attempt %d key %q at +%v",
						i, c.Attempt, c.Key, c.At.Sub(t0), i+1, calls[0].Key, tc.attempts[i])
				}
			}
			if tc.state == "paying" {
				k.AssertContext("o-1", "charged", true)
			}
		})
	}
}

func TestTimeToLive(t *testing.T) {
	t.Parallel()
	const session = `
id: session
ttl: 72h
rearm_ttl: %s
initial: open
states:
  open:
    on: {touch: open, close: closed}
  closed: {final: success}
`
	cases := []struct {
		name   string
		rearm  string
		status stead.Status // at +100h, after a touch at +48h
	}{
		{"fixed deadline expires", "false", stead.StatusDone},
		{"a touch pushes the deadline back", "true", stead.StatusRunning},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := steadtest.New(t).DefineYAML("session.yaml", sprintf(session, tc.rearm))
			start := k.Now()
			k.Create("session", "s-1", nil)
			k.Advance(48 * time.Hour)
			k.Send("s-1", "touch", nil)
			k.Advance(52 * time.Hour)
			k.AssertStatus("s-1", tc.status)
			exe := k.Expect("s-1", steadtest.Done("expired"), 100*time.Hour)
			want := start.Add(72 * time.Hour)
			if tc.rearm == "true" {
				want = start.Add(120 * time.Hour)
			}
			if !exe.FinishedAt.Equal(want) {
				t.Errorf("expired at +%v, want +%v", exe.FinishedAt.Sub(start), want.Sub(start))
			}
		})
	}
}

const invoice = `
id: invoice
initial: issuing
states:
  issuing:
    entry: [issue]
    on: {issued: sent}
  sent: {final: success}
retry: {issue: none} # fails at once: the operator's retry is what this test is about
`

func TestFailingActionWithoutErrorTransitionFailsAndRetries(t *testing.T) {
	t.Parallel()
	var broken atomic.Bool
	broken.Store(true)
	issue := func(c chart.ActionContext) (chart.ActionResult, error) {
		if broken.Load() {
			return chart.ActionResult{}, errors.New("printer on fire")
		}
		return chart.ActionResult{Send: []chart.Message{{Kind: "issued"}}}, nil
	}
	k := steadtest.New(t).Action("issue", issue).DefineYAML("invoice.yaml", invoice)
	k.Create("invoice", "inv-1", nil)
	exe := k.Expect("inv-1", steadtest.HasStatus(stead.StatusFailed), 0)
	if exe.Error == "" || exe.DeadLetter == nil {
		t.Errorf("failed execution without error or dead letter: %+v", exe)
	}
	if calls := k.Calls("issue"); len(calls) != 1 || calls[0].Err == nil {
		t.Errorf("calls %+v, want one failed", calls)
	}
	// The operator fixes the printer and retries: the dead letter's event runs again, and the
	// event the action sends to its own execution finishes it.
	broken.Store(false)
	k.Control("inv-1", worker.Command{Op: worker.OpRetry})
	k.Expect("inv-1", steadtest.Done("success"), 0)
	if em := k.Emitted("inv-1"); len(em) != 1 || em[0].Event.Kind != "issued" || em[0].Target != "inv-1" {
		t.Errorf("emitted %+v, want one issued to itself", em)
	}
	k.AssertCalls("issue", 2)
}

const (
	order = `
id: order
initial: shipping
context:
  order_id: {type: string, required: true}
  tracking: string
states:
  shipping:
    invoke: {definition: courier, input: {order_id: order_id}}
    done:
      - {outcome: success, target: delivered}
      - {target: lost}
  delivered: {final: success}
  lost: {final: failure}
`
	courier = `
id: courier
returns: [tracking]
initial: in_transit
states:
  in_transit:
    entry: [dispatch]
    timeout: {after: 36h, target: missing}
    on: {scanned: arrived}
  arrived: {final: success}
  missing: {final: failure}
`
)

func TestInvokedChildRunsOnTheSameClock(t *testing.T) {
	t.Parallel()
	dispatch := func(c chart.ActionContext) (chart.ActionResult, error) {
		c.SetString("tracking", "TRK-"+c.String("order_id"))
		return chart.ActionResult{}, nil
	}
	cases := []struct {
		name    string
		scan    bool
		outcome string
		after   time.Duration
	}{
		{"child succeeds", true, "success", time.Hour},
		{"child times out", false, "failure", 36 * time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := steadtest.New(t).Action("dispatch", dispatch).
				DefineYAML("order.yaml", order).DefineYAML("courier.yaml", courier)
			k.Create("order", "o-7", map[string]any{"order_id": "o-7"})
			kids := k.Children("o-7")
			if len(kids) != 1 {
				t.Fatalf("children %v, want one courier", kids)
			}
			child := kids[0]
			k.AssertState(child, "in_transit")
			k.AssertContext(child, "order_id", "o-7")
			if c := k.Calls("dispatch"); len(c) != 1 || c[0].ExecutionID != child {
				t.Errorf("dispatch calls %+v, want one by %s", c, child)
			}
			k.Advance(time.Hour)
			if tc.scan {
				k.Send(child, "scanned", nil)
			}
			exe := k.Expect("o-7", steadtest.Finished(), 48*time.Hour)
			if exe.Outcome != tc.outcome || !exe.FinishedAt.Equal(steadtest.DefaultEpoch().Add(tc.after)) {
				t.Errorf("parent %s/%s at +%v, want outcome %s at +%v", exe.Status, exe.Outcome,
					exe.FinishedAt.Sub(steadtest.DefaultEpoch()), tc.outcome, tc.after)
			}
			if tc.outcome == "success" {
				k.AssertContext("o-7", "tracking", "TRK-o-7")
			}
			k.AssertEmitted(child, "stead.finished", 1)
			k.AssertEmitted("o-7", "stead.finished", 0)
			// The child told its parent it finished: an emitted event from child to parent.
			if em := k.Emitted(child); len(em) == 0 || em[len(em)-1].Target != "o-7" {
				t.Errorf("child emitted %+v, want its completion sent to o-7", em)
			}
		})
	}
}
