package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/worker"
)

// builtinOrder names the bundled sample order flow wherever a definition file is expected;
// builtinDelivery and builtinCarrier the bundled delivery and the carrier it invokes.
const (
	builtinOrder    = "order"
	builtinDelivery = "delivery"
	builtinCarrier  = "carrier"
)

// builtins are the bundled samples, loaded when no definition is given.
var builtins = []string{builtinOrder, builtinDelivery, builtinCarrier}

// loadDefinition loads a YAML definition file, or a bundled sample by name.
func loadDefinition(spec string) (*chart.Definition, error) {
	switch spec {
	case builtinOrder:
		return chart.SampleOrderFlow()
	case builtinDelivery:
		return chart.SampleDelivery()
	case builtinCarrier:
		return chart.SampleCarrier()
	}
	def, err := chart.LoadFile(spec)
	if err != nil {
		return nil, fmt.Errorf("definition %s: %w", spec, err)
	}
	return def, nil
}

// loadMachines compiles the definitions (default: the bundled samples) into engines. Their
// actions and guards come from the registry every stead binary carries: the sample's.
func loadMachines(specs []string, opts ...chart.Option) (worker.Machines, map[string]*chart.Definition, error) {
	if len(specs) == 0 {
		specs = builtins
	}
	reg := chart.RegisterSampleActions(chart.NewRegistry())
	machines := worker.Machines{}
	defs := map[string]*chart.Definition{}
	for _, s := range specs {
		def, err := loadDefinition(s)
		if err != nil {
			return nil, nil, err
		}
		id := def.VersionedID()
		if _, dup := defs[id]; dup {
			return nil, nil, usageError{fmt.Errorf("definition %q given twice", id)}
		}
		e, err := chart.NewEngine(def, reg, opts...)
		if err != nil {
			return nil, nil, fmt.Errorf("definition %s: %w", s, err)
		}
		machines[id], defs[id] = e, def
	}
	return machines, defs, nil
}

// unfinished are the statuses of executions that still need their definition: running ones, and
// failed ones an operator may retry.
var unfinished = []stead.Status{stead.StatusPending, stead.StatusRunning, stead.StatusSuspended,
	stead.StatusCancelling, stead.StatusFailed}

func newDefs() *cobra.Command {
	var (
		sf    storeFlags
		specs []string
	)
	cmd := &cobra.Command{
		Use:   "defs --store S [--definition F]...",
		Short: "List the definitions given and the versions unfinished executions still run on",
		Long: `defs loads the definitions given (default: the bundled sample) and counts, in the store, the
unfinished executions (pending, running, suspended, cancelling, or failed and so retriable) of
every version of those definitions. A version that executions still run on but no definition
given provides is an error (exit 1): workers started with these files could not run them. Run it
before dropping an old version's file from a deployment; migrate what still runs on it with
set-state first (see ARCHITECTURE.md, "Definition versions").`,
		Args: exactArgs(0, "no arguments (use --definition)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			machines, defs, err := loadMachines(specs)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			b, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer b.Close()
			bases := map[string]bool{}
			for _, d := range defs {
				bases[d.ID] = true
			}
			counts := map[string]int{}
			f := stead.ListFilter{Statuses: unfinished, Limit: stead.MaxListLimit}
			for {
				page, err := b.Store.List(ctx, f)
				if err != nil {
					return err
				}
				for _, it := range page.Items {
					if base, _ := chart.SplitVersion(it.DefinitionID); bases[base] {
						counts[it.DefinitionID]++
					}
				}
				if page.NextCursor == "" {
					break
				}
				f.Cursor = page.NextCursor
			}
			ids := slices.Sorted(maps.Keys(defs))
			for id := range counts {
				if defs[id] == nil {
					ids = append(ids, id)
				}
			}
			slices.Sort(ids)
			ids = slices.Compact(ids)
			out := cmd.OutOrStdout()
			var missing []string
			for _, id := range ids {
				base, _ := chart.SplitVersion(id)
				mark := ""
				switch {
				case defs[id] == nil:
					mark = "  NOT LOADED"
					missing = append(missing, id)
				case machines.Resolve(base) == id:
					mark = "  (newest: new executions start here)"
				}
				fmt.Fprintf(out, "%-24s %6d unfinished%s\n", id, counts[id], mark)
			}
			if len(missing) > 0 {
				return fmt.Errorf("unfinished executions run on %s, which no definition given provides: keep loading it, or move them with set-state first",
					strings.Join(missing, ", "))
			}
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().StringArrayVar(&specs, "definition", nil, "definition YAML file, or \"order\" for the bundled sample (repeatable)")
	cmd.AddCommand(newDefsCheck())
	return cmd
}
