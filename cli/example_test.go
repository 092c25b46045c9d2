package cli_test

import (
	"context"
	"os"

	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/cli"
)

// approval is a flow of one's own, with an action the stock stead binary does not have.
func approval() (*chart.Definition, *chart.Registry) {
	b := chart.New("approval").Initial("waiting")
	waiting := b.State("waiting")
	waiting.On("approved", "approved").Do("open_ticket")
	waiting.On("rejected", "rejected")
	b.State("approved").Final("success")
	b.State("rejected").Final("rejected")
	def, err := b.Definition()
	if err != nil {
		panic(err)
	}
	reg := chart.NewRegistry().Action("open_ticket", func(c chart.ActionContext) (chart.ActionResult, error) {
		// Call the ticket system here, with c.Key() as its idempotency key.
		return chart.ActionResult{}, nil
	})
	return def, reg
}

// A binary of one's own is the whole stead command line with one's definitions and actions:
// run, start, send, inspect, retry, serve and the rest all know them.
func ExampleMain() {
	def, reg := approval()
	cli.Main(cli.Config{Definitions: []*chart.Definition{def}, Registry: reg})
}

// Run executes one command line and returns its exit code, which makes a binary's commands
// testable in-process.
func ExampleRun() {
	def, reg := approval()
	cfg := cli.Config{Definitions: []*chart.Definition{def}, Registry: reg}
	code := cli.Run(context.Background(), cfg, []string{"diagram", "--definition", "approval"}, os.Stdout, os.Stderr)
	if code != 0 {
		os.Exit(code)
	}
	// Output:
	// stateDiagram-v2
	//   [*] --> s0
	//   state "waiting" as s0
	//   state "approved" as s1
	//   s1 --> [*] : success
	//   state "rejected" as s2
	//   s2 --> [*] : rejected
	//   s0 --> s1 : approved / open_ticket
	//   s0 --> s2 : rejected
}
