package main

import (
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/steadtest/replay"
)

// newDefsCheck is `stead defs check`: the replay check of new definition versions against the
// paths recorded by executions of the older ones (package steadtest/replay).
func newDefsCheck() *cobra.Command {
	var (
		sf       storeFlags
		specs    []string
		statuses []string
		limit    int
	)
	cmd := &cobra.Command{
		Use:   "check --store S --definition F... [--status S]... [--limit N]",
		Short: "Replay the traces of executions of older versions against the definitions given",
		Long: `check loads the definitions given (default: the bundled samples) and, for each, replays the
recorded trace of every execution of another version of the same definition id against it, step by
step, from the state each step was taken in. It prints the executions whose path the new version
would change — the first step that would end in another state, or that it refuses (a state it no
longer has) — and exits 1 when there is any. Executions that recorded no trace cannot be checked
(a definition records its trace with "trace: true"); steps that operators' commands and failed
retry attempts left are not judged. Actions and guards are the stead binary's (the samples').`,
		Args: exactArgs(0, "no arguments (use --definition)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			machines, _, err := loadMachines(specs)
			if err != nil {
				return err
			}
			var sts []stead.Status
			for _, s := range statuses {
				st := stead.Status(s)
				if !st.Valid() {
					return usageError{fmt.Errorf("--status %q is not a status", s)}
				}
				sts = append(sts, st)
			}
			if limit < 0 {
				return usageError{fmt.Errorf("--limit %d is negative", limit)}
			}
			ctx := cmd.Context()
			b, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer b.Close()
			out := cmd.OutOrStdout()
			changed := 0
			for _, id := range slices.Sorted(maps.Keys(machines)) {
				eng, ok := machines[id].(*chart.Engine)
				if !ok {
					return fmt.Errorf("definition %s: not a statechart engine", id)
				}
				rep, err := replay.Check(ctx, b.Store, eng, replay.Options{Statuses: sts, Limit: limit})
				if err != nil {
					return err
				}
				for _, c := range rep.Changed {
					fmt.Fprintf(out, "CHANGED  %s\n", c)
				}
				fmt.Fprintf(out, "%-24s %d replayed, %d changed, %d untraced, %d steps not judged\n",
					id, rep.Checked, len(rep.Changed), len(rep.Untraced), rep.Unchecked)
				changed += len(rep.Changed)
			}
			if changed > 0 {
				return fmt.Errorf("%d executions would change their path under the definitions given", changed)
			}
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().StringArrayVar(&specs, "definition", nil, "new definition YAML file, or a bundled sample's name (repeatable)")
	cmd.Flags().StringArrayVar(&statuses, "status", nil, "replay only executions with this status (repeatable; default all)")
	cmd.Flags().IntVar(&limit, "limit", 0, "replay at most this many executions per definition (0: all)")
	return cmd
}
