package steadtest_test

// The test README.md shows under "Testing your flows", kept here so that it keeps compiling
// and passing.

import (
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/steadtest"
)

const invoiceFlow = `
id: invoice
initial: unpaid
states:
  unpaid:
    entry: [send_invoice]
    timeout: {after: 24h, target: overdue}
    on: {paid: settled}
  overdue:
    entry: [send_reminder]
    timeout: {after: 24h, target: collections}
    on: {paid: settled}
  settled: {final: success}
  collections: {final: failure}
`

func TestInvoiceGoesOverdueAfterADay(t *testing.T) {
	mail := func(c chart.ActionContext) (chart.ActionResult, error) {
		return chart.ActionResult{}, nil // the real one sends with c.Key() as the idempotency key
	}
	k := steadtest.New(t).
		Action("send_invoice", mail).
		Action("send_reminder", mail).
		DefineYAML("invoice.yaml", invoiceFlow)

	k.Create("invoice", "inv-1", map[string]any{"amount": 120})
	k.AssertState("inv-1", "unpaid")

	k.Advance(24 * time.Hour) // milliseconds of real time
	k.AssertState("inv-1", "overdue")
	k.AssertCalls("send_reminder", 1)

	k.Send("inv-1", "paid", nil)
	k.AssertStatus("inv-1", stead.StatusDone)

	// Or let virtual time run until a condition holds, at most a week; on failure the error
	// says where the execution was, its timers and the steps it took.
	k.Create("invoice", "inv-2", nil)
	exe := k.Expect("inv-2", steadtest.Done("failure"), 7*24*time.Hour)
	if got := exe.FinishedAt.Sub(exe.CreatedAt); got != 48*time.Hour {
		t.Errorf("sent to collections after %v", got)
	}
}
