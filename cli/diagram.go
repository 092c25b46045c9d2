package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
)

func (a *app) newDiagram() *cobra.Command {
	var (
		sf        storeFlags
		defSpec   string
		execution string
	)
	cmd := &cobra.Command{
		Use:   "diagram (--definition <file | id> | --store S --execution ID)",
		Short: "Print a definition, or an execution's place in it, as a Mermaid diagram",
		Long: `diagram prints the definition as a Mermaid state diagram (paste it into any Markdown that renders
Mermaid). With --store and --execution it highlights the execution's active states, including
those of its running region children; the definition is then the execution's, when it is
compiled into this binary, or the file --definition names. Drawing needs no actions: any
definition file this binary can read is drawn.`,
		Args: exactArgs(0, "no arguments (use --definition)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if execution == "" && sf.spec != "" {
				return usageError{fmt.Errorf("--store needs --execution")}
			}
			var def *chart.Definition
			if defSpec != "" {
				var err error
				if def, _, err = a.definition(defSpec); err != nil {
					return err
				}
			} else if execution == "" {
				if len(a.cfg.Definitions) != 1 {
					return usageError{fmt.Errorf("--definition is required: a YAML file, or the id of one compiled into this binary (%s)", a.builtinIDs())}
				}
				def = a.cfg.Definitions[0]
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
				if def == nil {
					for _, d := range a.cfg.Definitions {
						if d.VersionedID() == exe.DefinitionID {
							def = d
						}
					}
					if def == nil {
						return usageError{fmt.Errorf("execution %q runs definition %q, which is not compiled into this binary: give its file with --definition", exe.ID, exe.DefinitionID)}
					}
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
			}
			fmt.Fprint(cmd.OutOrStdout(), def.Mermaid(active...))
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&defSpec, "definition", "", "definition YAML file, or the id of one compiled into this binary")
	cmd.Flags().StringVar(&execution, "execution", "", "highlight this execution's active states (needs --store)")
	return cmd
}
