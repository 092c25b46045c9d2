package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/steadtest"
	"github.com/steadhq/stead/steadtest/replay"
)

// Check a version 2 of a refund flow against what executions of version 1 did: version 2 sends
// large refunds to review, which changes the path of the one that was refunded at once.
func Example() {
	t := &testing.T{} // stand-in: an Example has no *testing.T
	k := steadtest.New(t).DefineYAML("refund-v1.yaml", `
id: refund
version: 1
initial: requested
states:
  requested:
    timeout: {after: 72h, target: abandoned}
    on: {approve: refunded}
  refunded: {final: success}
  abandoned: {final: failure}
`)
	defer k.Close()
	k.Create("refund", "r-1", nil)
	k.Create("refund", "r-2", nil)
	k.Send("r-1", "approve", nil)
	k.Advance(72 * time.Hour) // r-2 is abandoned

	v2, err := chart.Parse("refund-v2.yaml", []byte(`
id: refund
version: 2
initial: requested
states:
  requested:
    timeout: {after: 72h, target: abandoned}
    on: {approve: review}
  review:
    on: {confirm: refunded}
  refunded: {final: success}
  abandoned: {final: failure}
`))
	if err != nil {
		panic(err)
	}
	next, err := chart.NewEngine(v2, nil)
	if err != nil {
		panic(err)
	}
	rep, err := replay.Check(context.Background(), k.Store(), next, replay.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(rep.Checked, "replayed against", rep.Next)
	for _, c := range rep.Changed {
		fmt.Println(c)
	}
	// Output:
	// 2 replayed against refund@2
	// r-1 (refund@1) step 1, approve in requested: goes to review instead of refunded
}
