package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead"
)

func newDiagram() *cobra.Command {
	var (
		sf        storeFlags
		defSpec   string
		execution string
	)
	cmd := &cobra.Command{
		Use:   "diagram --definition <file | order> [--store S --execution ID]",
		Short: "Print a definition, or an execution's place in it, as a Mermaid diagram",
		Long: `diagram prints the definition as a Mermaid state diagram (paste it into any Markdown that renders
Mermaid). With --store and --execution it highlights the execution's active states, including
those of its running region children.`,
		Args: exactArgs(0, "no arguments (use --definition)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			def, err := loadDefinition(defSpec)
			if err != nil {
				return err
			}
			var active []string
			if execution != "" {
				ctx := cmd.Context()
				b, err := sf.open(ctx)
				if err != nil {
					return err
				}
				defer b.Close()
				exe, err := b.Store.Load(ctx, execution)
				if err != nil {
					return err
				}
				if exe.DefinitionID != def.VersionedID() {
					return fmt.Errorf("execution %q runs definition %q, not %q", exe.ID, exe.DefinitionID, def.VersionedID())
				}
				active = append(active, exe.ActivePath)
				for cid, c := range exe.Children {
					if c.Finished {
						continue
					}
					child, err := b.Store.Load(ctx, cid)
					if err == nil && child.Status == stead.StatusRunning {
						active = append(active, child.ActivePath)
					}
				}
			} else if sf.spec != "" {
				return usageError{fmt.Errorf("--store needs --execution")}
			}
			fmt.Fprint(cmd.OutOrStdout(), def.Mermaid(active...))
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&defSpec, "definition", builtinOrder, "definition YAML file, or \"order\" for the bundled sample")
	cmd.Flags().StringVar(&execution, "execution", "", "highlight this execution's active states (needs --store)")
	return cmd
}
