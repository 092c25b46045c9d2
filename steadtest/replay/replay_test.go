package replay_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/steadtest"
	"github.com/steadhq/stead/steadtest/replay"
	"github.com/steadhq/stead/worker"
)

// approvalV1 is version 1 of an approval; the tests check changed copies of it against what
// its executions did.
const approvalV1 = `
id: approval
version: 1
initial: waiting
states:
  waiting:
    entry: [notify]
    timeout: {after: 24h, target: escalated}
    on: {approve: approved, reject: rejected}
  escalated:
    timeout: {after: 24h, target: expired}
    on: {approve: approved}
  approved: {final: success}
  rejected: {final: failure}
  expired: {final: expired}
`

func noop(chart.ActionContext) (chart.ActionResult, error) { return chart.ActionResult{}, nil }

// recordV1 runs four executions of version 1 on a kit: approved at once, rejected, approved
// after escalation, and expired.
func recordV1(t *testing.T) *steadtest.Kit {
	k := steadtest.New(t).Action("notify", noop).DefineYAML("approval-v1.yaml", approvalV1)
	for _, id := range []string{"a-approved", "b-rejected", "c-escalated", "d-expired"} {
		k.Create("approval", id, nil)
	}
	k.Send("a-approved", "approve", nil)
	k.Send("b-rejected", "reject", nil)
	k.Advance(25 * time.Hour)
	k.Send("c-escalated", "approve", nil)
	k.Advance(48 * time.Hour)
	return k
}

// v2 edits version 1 into version 2 with the replacements given in pairs.
func v2(t *testing.T, edits ...string) *chart.Engine {
	t.Helper()
	src := strings.Replace(approvalV1, "version: 1", "version: 2", 1)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(src, edits[i]) {
			t.Fatalf("edit %q: not in the definition", edits[i])
		}
		src = strings.Replace(src, edits[i], edits[i+1], 1)
	}
	def, err := chart.Parse("approval-v2.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := chart.NewEngine(def, chart.NewRegistry().Action("notify", noop))
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

func TestCheckReportsExecutionsWhosePathChanges(t *testing.T) {
	t.Parallel()
	k := recordV1(t)
	cases := []struct {
		name  string
		edits []string
		want  []string // "execution: reason" of each change
	}{
		{"same states, a new event", []string{"on: {approve: approved, reject: rejected}",
			"on: {approve: approved, reject: rejected, hold: escalated}"}, nil},
		{"longer timeout, same path", []string{"timeout: {after: 24h, target: escalated}",
			"timeout: {after: 48h, target: escalated}"}, nil},
		{"approve goes elsewhere while waiting", []string{"on: {approve: approved, reject: rejected}",
			"on: {approve: escalated, reject: rejected}"},
			[]string{"a-approved: goes to escalated instead of approved"}},
		{"the second timeout goes elsewhere", []string{"timeout: {after: 24h, target: expired}\n    on: {approve: approved}",
			"timeout: {after: 24h, target: rejected}\n    on: {approve: approved, give_up: expired}"},
			[]string{"d-expired: goes to rejected instead of expired"}},
		{"a state is renamed", []string{"escalated:\n", "escalated_to_manager:\n", "target: escalated}", "target: escalated_to_manager}"},
			[]string{"c-escalated: goes to escalated_to_manager instead of escalated",
				"d-expired: goes to escalated_to_manager instead of escalated"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := replay.Check(context.Background(), k.Store(), v2(t, tc.edits...), replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range rep.Changed {
				got = append(got, c.ExecutionID+": "+c.Reason)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if rep.Next != "approval@2" || rep.Checked != 4 || len(rep.Untraced) != 0 || rep.Unchecked != 0 {
				t.Errorf("report %+v: want approval@2, 4 checked, none untraced or unchecked", rep)
			}
		})
	}
}

func TestCheckRefusesWhatNextCannotRun(t *testing.T) {
	t.Parallel()
	k := recordV1(t)
	// Version 2 drops the escalation: an execution waiting there could not go on.
	eng := v2(t, "timeout: {after: 24h, target: escalated}", "timeout: {after: 24h, target: expired}",
		"  escalated:\n    timeout: {after: 24h, target: expired}\n    on: {approve: approved}\n", "")
	rep, err := replay.Check(context.Background(), k.Store(), eng, replay.Options{Definitions: []string{"approval@1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Changed) != 2 {
		t.Fatalf("changes %v, want c-escalated and d-expired", rep.Changed)
	}
	for i, id := range []string{"c-escalated", "d-expired"} {
		c := rep.Changed[i]
		if c.ExecutionID != id || c.Step.Index != 1 || c.Next != "expired" {
			t.Errorf("change %d: %v, want %s at step 1 going to expired", i, c, id)
		}
	}
	if s := rep.Changed[0].String(); !strings.Contains(s, "c-escalated (approval@1) step 1, stead.timeout in waiting: goes to expired instead of escalated") {
		t.Errorf("change reads %q", s)
	}
	// A third version without "escalated" at all is not even able to take c-escalated's approve
	// from there: the state does not exist.
	eng = v2(t, "escalated:\n", "later:\n", "target: escalated}", "target: later}")
	rep, err = replay.Check(context.Background(), k.Store(), eng, replay.Options{Statuses: []stead.Status{stead.StatusDone}, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Checked != 3 {
		t.Errorf("checked %d with limit 3", rep.Checked)
	}
	if _, err := replay.Check(context.Background(), nil, eng, replay.Options{}); !errors.Is(err, stead.ErrInvalid) {
		t.Errorf("nil store: %v, want ErrInvalid", err)
	}
	if _, err := replay.Check(context.Background(), k.Store(), eng, replay.Options{Limit: -1}); !errors.Is(err, stead.ErrInvalid) {
		t.Errorf("negative limit: %v, want ErrInvalid", err)
	}
}

func TestCheckRefusalOfAStateNextLacks(t *testing.T) {
	t.Parallel()
	k := steadtest.New(t).Action("notify", noop).DefineYAML("approval-v1.yaml", approvalV1)
	k.Create("approval", "e-moved", nil)
	// An operator moves it: set-state is not the definition's decision, so it is not judged.
	k.Control("e-moved", worker.Command{Op: worker.OpSetState, State: "escalated"})
	k.Send("e-moved", "approve", nil)
	eng := v2(t, "timeout: {after: 24h, target: escalated}", "timeout: {after: 24h, target: expired}",
		"  escalated:\n    timeout: {after: 24h, target: expired}\n    on: {approve: approved}\n", "")
	rep, err := replay.Check(context.Background(), k.Store(), eng, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Changed) != 1 || rep.Unchecked != 1 {
		t.Fatalf("report %+v: want one change and the set-state unchecked", rep)
	}
	c := rep.Changed[0]
	if c.Step.From != "escalated" || c.Next != "" || !strings.Contains(c.Reason, "approval@2 refuses the step") {
		t.Errorf("change %v, want a refusal of the approve in escalated", c)
	}
}

const (
	orderV1 = `
id: order
version: 1
initial: checkout
states:
  checkout:
    entry: [charge]
    on: {charged: shipping}
  shipping:
    invoke: {definition: courier, input: {order_id: order_id}}
    done:
      - {outcome: success, target: delivered}
      - {target: lost}
  delivered: {final: success}
  lost: {final: failure}
retry:
  charge: {attempts: 3, backoff: 1m}
`
	courier = `
id: courier
initial: in_transit
states:
  in_transit:
    timeout: {after: 36h, target: missing}
    on: {scanned: arrived}
  arrived: {final: success}
  missing: {final: failure}
`
)

// TestCheckRetriesAndChildren replays the steps a retried action and an invoked child leave in
// a parent's trace: the failed attempts are skipped, the child's outcome comes from the parent's
// record.
func TestCheckRetriesAndChildren(t *testing.T) {
	t.Parallel()
	var failures atomic.Int64
	charge := func(c chart.ActionContext) (chart.ActionResult, error) {
		if c.Attempt == 1 && failures.Add(1) <= 2 { // the first attempt of the first two orders fails
			return chart.ActionResult{}, errors.New("card network timed out")
		}
		return chart.ActionResult{Send: []chart.Message{{Kind: "charged"}}}, nil
	}
	k := steadtest.New(t).Action("charge", charge).DefineYAML("order-v1.yaml", orderV1).DefineYAML("courier.yaml", courier)
	for _, id := range []string{"o-delivered", "o-lost"} {
		k.Create("order", id, map[string]any{"order_id": id})
	}
	k.Advance(time.Minute) // the retries succeed
	k.Send(k.Children("o-delivered")[0], "scanned", nil)
	k.Advance(40 * time.Hour) // the other courier goes missing
	k.AssertState("o-delivered", "delivered")
	k.AssertState("o-lost", "lost")
	k.AssertCalls("charge", 4)

	cases := []struct {
		name  string
		edits []string
		want  string
	}{
		{"unchanged but for the version", nil, ""},
		{"a lost parcel is now refunded", []string{"      - {target: lost}\n", "      - {outcome: failure, target: refunded}\n      - {target: lost}\n",
			"  lost: {final: failure}\n", "  lost: {final: failure}\n  refunded: {final: failure}\n"},
			"o-lost: goes to refunded instead of lost"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(orderV1, "version: 1", "version: 2", 1)
			for i := 0; i+1 < len(tc.edits); i += 2 {
				src = strings.Replace(src, tc.edits[i], tc.edits[i+1], 1)
			}
			def, err := chart.Parse("order-v2.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			eng, err := chart.NewEngine(def, chart.NewRegistry().Action("charge", charge))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := replay.Check(context.Background(), k.Store(), eng, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range rep.Changed {
				got = append(got, c.ExecutionID+": "+c.Reason)
			}
			if strings.Join(got, "\n") != tc.want {
				t.Errorf("changes %q, want %q", got, tc.want)
			}
			// Both failed attempts are skipped; the couriers (another definition) are not replayed.
			if rep.Checked != 2 || rep.Unchecked != 2 {
				t.Errorf("checked %d, unchecked %d; want 2 and 2", rep.Checked, rep.Unchecked)
			}
		})
	}
}
