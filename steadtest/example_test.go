package steadtest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/steadtest"
)

// A trial that converts or lapses after 14 days, tested without waiting: the kit's clock jumps
// two weeks, the timer fires at its own instant, and the test reads the outcome at once. In a
// test, pass the *testing.T instead of the stand-in used here.
func Example() {
	t := &testing.T{} // stand-in: an Example has no *testing.T
	k := steadtest.New(t)
	defer k.Close() // a test's cleanup does this
	k.
		Action("send_reminder", func(c chart.ActionContext) (chart.ActionResult, error) {
			return chart.ActionResult{}, nil // a real action would call the mailer with c.Key()
		}).
		DefineYAML("trial.yaml", `
id: trial
initial: active
states:
  active:
    timeout: {after: 336h, target: lapsed}
    on: {subscribe: converted}
  lapsed:
    entry: [send_reminder]
    on: {subscribe: converted}
  converted: {final: success}
`)
	start := k.Now()
	k.Create("trial", "acct-9", nil)

	k.Advance(14 * 24 * time.Hour)
	exe := k.Execution("acct-9")
	fmt.Println(exe.ActivePath, "after", k.Now().Sub(start))
	for _, c := range k.Calls("send_reminder") {
		fmt.Println("reminder", c.Key, "at", c.At.Sub(start))
	}

	k.Send("acct-9", "subscribe", nil)
	exe = k.Execution("acct-9")
	fmt.Println(exe.Status, exe.Outcome, k.Path("acct-9"))
	// Output:
	// lapsed after 336h0m0s
	// reminder acct-9:2:0 at 336h0m0s
	// done success [active lapsed converted]
}

// Wait lets virtual time pass until a condition holds, and says what it saw when it does not.
func ExampleKit_Wait() {
	t := &testing.T{} // stand-in: an Example has no *testing.T
	k := steadtest.New(t).DefineYAML("hold.yaml", `
id: hold
initial: held
states:
  held:
    timeout: {after: 48h, target: released}
  released: {final: success}
`)
	defer k.Close()
	k.Create("hold", "h-1", nil)

	_, err := k.Wait("h-1", steadtest.Done("success"), 24*time.Hour)
	fmt.Println(err)
	exe, err := k.Wait("h-1", steadtest.Done("success"), 72*time.Hour)
	fmt.Println(exe.Status, exe.FinishedAt.Sub(exe.CreatedAt), err)
	// Output:
	// steadtest: execution "h-1" is not done with outcome success within 24h0m0s: at 2026-01-01T00:00:00Z it is running in state "held" at version 2, timers held@2026-01-03T00:00:00Z; went [stead.start -> held]
	// done 48h0m0s <nil>
}
