package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/worker"
)

func (a *app) newStart() *cobra.Command {
	var (
		sf        storeFlags
		id        string
		data      string
		priority  int
		attrFlags []string
		defs      []string
	)
	cmd := &cobra.Command{
		Use:   "start --store <sqlite path | postgres URL> <definition-id> [--id ID] [--context JSON] [--definition F]...",
		Short: "Create an execution and send it its start event",
		Long: `start stores a new execution of the definition and queues its start event (durably, with the
record). A running worker ("stead run") that knows the definition picks it up. It prints the
execution id.

The definition is checked when this binary has it (compiled in, or given with --definition:
the files the workers run): an id without a version starts on the newest version it has, and a
context that breaks the definition's declared keys is refused before anything is written. With
--definition the id must be one of those given. A definition the binary does not have is
started unchecked, with a note on stderr.`,
		Args: exactArgs(1, "a definition id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if id == "" {
				id = "exe-" + worker.NewEventID()[3:]
			}
			attrs, err := parseAttrs(attrFlags)
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if data != "" {
				raw = json.RawMessage(data)
			}
			// The definitions are read before the store is opened: a refusal writes nothing.
			cat, err := a.load(defs)
			if err != nil {
				return err
			}
			var known worker.Machines
			if len(defs) > 0 {
				if known, err = cat.runnable(); err != nil {
					return err
				}
			} else if def := cat.resolve(args[0]); cat.defs[def] != nil {
				if err := cat.need(def); err != nil {
					return err
				}
				known = cat.machines
			}
			ctx := cmd.Context()
			b, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer b.Close()
			c, err := b.Client(known)
			if err != nil {
				return err
			}
			if known == nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: definition %q is not compiled into this binary nor given with --definition: its id and context are not checked, and its limit (if it declares one) is not applied\n", args[0])
			}
			exe, err := c.CreateBatch(ctx, []worker.NewExecution{{DefinitionID: args[0], ID: id, Context: raw, Priority: priority, Attributes: attrs}})
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), exe[0].ID)
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&id, "id", "", "execution id (default: a random one)")
	cmd.Flags().StringVar(&data, "context", "", "initial context, a JSON object")
	cmd.Flags().StringArrayVar(&attrFlags, "attr", nil, "an attribute of the execution, key=value (repeatable): customer=42, due=2026-12-24T00:00:00Z, vip=true; a quoted value is a string")
	cmd.Flags().IntVar(&priority, "priority", 0, fmt.Sprintf("claim priority 0..%d", stead.MaxPriority))
	cmd.Flags().StringArrayVar(&defs, "definition", nil, definitionHelp+": check the id and context against it")
	return cmd
}

func newMigrate() *cobra.Command {
	sf := storeFlags{creates: true}
	cmd := &cobra.Command{
		Use:   "migrate --store <sqlite path | postgres URL>",
		Short: "Create or upgrade the schema of the execution store, the transport and the turn store",
		Long: `migrate applies the schema migrations embedded in this binary, for the execution store, the
transport and the turn store, creating the SQLite file of --store when there is none. It is safe to run from many processes at once; every other
command migrates what it opens too, so this is for deploy pipelines that want the schema in
place before workers start.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			if _, err := b.Turns(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "schema up to date: %s (%s): execution store, transport, turns\n", b.Where, b.Kind)
			return nil
		},
	}
	sf.register(cmd)
	return cmd
}
