package main

import (
	"fmt"

	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/worker"
)

// builtinOrder names the bundled sample order flow wherever a definition file is expected.
const builtinOrder = "order"

// loadDefinition loads a YAML definition file, or the bundled sample for "order".
func loadDefinition(spec string) (*chart.Definition, error) {
	if spec == builtinOrder {
		return chart.SampleOrderFlow()
	}
	def, err := chart.LoadFile(spec)
	if err != nil {
		return nil, fmt.Errorf("definition %s: %w", spec, err)
	}
	return def, nil
}

// loadMachines compiles the definitions (default: the sample order flow) into engines. Their
// actions and guards come from the registry every stead binary carries: the sample's.
func loadMachines(specs []string, opts ...chart.Option) (worker.Machines, map[string]*chart.Definition, error) {
	if len(specs) == 0 {
		specs = []string{builtinOrder}
	}
	reg := chart.RegisterSampleActions(chart.NewRegistry())
	machines := worker.Machines{}
	defs := map[string]*chart.Definition{}
	for _, s := range specs {
		def, err := loadDefinition(s)
		if err != nil {
			return nil, nil, err
		}
		if _, dup := defs[def.ID]; dup {
			return nil, nil, usageError{fmt.Errorf("definition id %q given twice", def.ID)}
		}
		e, err := chart.NewEngine(def, reg, opts...)
		if err != nil {
			return nil, nil, fmt.Errorf("definition %s: %w", s, err)
		}
		machines[def.ID], defs[def.ID] = e, def
	}
	return machines, defs, nil
}
