package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/cli"
	"github.com/steadhq/stead/worker"
)

func main() { cli.Main(config()) }

// builtinOrder names the bundled sample order flow; builtinDelivery and builtinCarrier the
// bundled delivery and the carrier it invokes.
const (
	builtinOrder    = "order"
	builtinDelivery = "delivery"
	builtinCarrier  = "carrier"
)

// config is the stock stead: the bundled samples with their actions, and the commands that show
// them off (demo, demo-operate) and measure stead (bench).
func config() cli.Config {
	return cli.Config{
		Name:        "stead",
		Definitions: samples(),
		Registry:    chart.RegisterSampleActions(chart.NewRegistry()),
		Commands:    func() []*cobra.Command { return []*cobra.Command{newDemo(), newDemoOperate(), newBench()} },
	}
}

// samples are the bundled sample definitions. They are built from embedded files that the
// chart package's tests parse: a failure here is a broken build, not a runtime condition.
func samples() []*chart.Definition {
	var out []*chart.Definition
	for _, load := range []func() (*chart.Definition, error){chart.SampleOrderFlow, chart.SampleDelivery, chart.SampleCarrier} {
		d, err := load()
		if err != nil {
			panic(fmt.Sprintf("stead: bundled sample: %v", err))
		}
		out = append(out, d)
	}
	return out
}

// sampleMachines compiles the named samples with their actions.
func sampleMachines(ids []string, opts ...chart.Option) (worker.Machines, error) {
	reg := chart.RegisterSampleActions(chart.NewRegistry())
	m := worker.Machines{}
	for _, d := range samples() {
		for _, id := range ids {
			if d.ID != id {
				continue
			}
			e, err := chart.NewEngine(d, reg, opts...)
			if err != nil {
				return nil, err
			}
			m[d.VersionedID()] = e
		}
	}
	return m, nil
}

// exactArgs refuses any other number of arguments than n, as a usage mistake.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return cli.Usagef("%s: want %s, got %d argument(s)", cmd.CommandPath(), names, len(args))
		}
		return nil
	}
}
