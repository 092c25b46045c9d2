package cli

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

// unfinished are the statuses of executions that still need their definition: running ones, and
// failed ones an operator may retry.
var unfinished = []stead.Status{stead.StatusPending, stead.StatusRunning, stead.StatusSuspended,
	stead.StatusCancelling, stead.StatusFailed}

func (a *app) newDefs() *cobra.Command {
	var (
		sf    storeFlags
		specs []string
	)
	cmd := &cobra.Command{
		Use:   "defs --store S [--definition F]...",
		Short: "List the definitions given and the versions unfinished executions still run on",
		Long: `defs loads the definitions given (default: those compiled into this binary) and counts, in the store, the
unfinished executions (pending, running, suspended, cancelling, or failed and so retriable) of
every version of those definitions. A version that executions still run on but no definition
given provides is an error (exit 1): workers started with these files could not run them. Run it
before dropping an old version's file from a deployment; migrate what still runs on it with
set-state first (see ARCHITECTURE.md, "Definition versions").`,
		Args: exactArgs(0, "no arguments (use --definition)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cat, err := a.load(specs)
			if err != nil {
				return err
			}
			// Every definition read counts, whether or not this binary holds its actions.
			defs := cat.defs
			machines := worker.Machines{}
			for id := range defs {
				machines[id] = cat.machines[id]
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
	cmd.Flags().StringArrayVar(&specs, "definition", nil, definitionHelp)
	cmd.AddCommand(a.newDefsCheck())
	return cmd
}
