package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead"
)

func (a *app) newSend() *cobra.Command {
	var (
		sf      storeFlags
		data    string
		eventID string
		defs    []string
		force   bool
	)
	cmd := &cobra.Command{
		Use:   "send --store <sqlite path | postgres URL> <execution-id> <event-kind> [--data JSON]",
		Short: "Send an event to an execution",
		Long: `send queues an event for the execution; a running worker applies it. Give --event-id to make a
retried send idempotent (an execution applies each event id once). It prints the event id.

An event a worker would drop is refused, with the reason, and nothing is sent: the execution is
finished (done, failed, cancelled) or being cancelled, or its definition (compiled into this
binary, or given with --definition) handles no event of that kind anywhere. --force sends it
anyway. To an execution of a definition this command did not read, the event is sent with a
note on stderr: its kind is not checked.`,
		Args: exactArgs(2, "an execution id and an event kind"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, kind := args[0], args[1]
			var cat *catalog
			if !force {
				var err error
				if cat, err = a.load(defs); err != nil {
					return err
				}
			}
			ctx := cmd.Context()
			b, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer b.Close()
			if cat != nil {
				exe, err := b.Store.Load(ctx, id)
				if err != nil {
					return err
				}
				if err := sendable(exe, kind, cat); err != nil {
					return err
				}
				if cat.defs[exe.DefinitionID] == nil {
					// Sent, but say that nothing vouched for the kind.
					fmt.Fprintf(cmd.ErrOrStderr(), "note: definition %q was not read (give its file with --definition): the kind %q is not checked\n",
						exe.DefinitionID, kind)
				}
			}
			c, err := b.Client(nil)
			if err != nil {
				return err
			}
			ev := stead.Event{ID: eventID, Kind: kind}
			if data != "" {
				ev.Data = json.RawMessage(data)
			}
			ev, err = c.Send(ctx, id, ev)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), ev.ID)
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&data, "data", "", "event data, JSON")
	cmd.Flags().StringVar(&eventID, "event-id", "", "event id, the dedupe key (default: a random one)")
	cmd.Flags().StringArrayVar(&defs, "definition", nil, definitionHelp+": check the event kind against it")
	cmd.Flags().BoolVar(&force, "force", false, "send even when the execution is finished or its definition handles no such event")
	return cmd
}

// errWouldDrop is the refusal of an event a worker would drop.
var errWouldDrop = errors.New("a worker would drop it; --force sends it anyway")

// sendable refuses an event a worker would drop: one to a finished execution, or of a kind its
// definition never handles. An execution whose definition was not read is not checked for kinds.
func sendable(exe *stead.Execution, kind string, cat *catalog) error {
	switch exe.Status {
	case stead.StatusDone, stead.StatusFailed, stead.StatusCancelled, stead.StatusCancelling:
		what := string(exe.Status)
		if exe.Outcome != "" {
			what += " (" + exe.Outcome + ")"
		}
		return fmt.Errorf("%w: send %q to %q: the execution is %s: %w", stead.ErrInvalid, kind, exe.ID, what, errWouldDrop)
	}
	def := cat.defs[exe.DefinitionID]
	if def == nil || handles(def, kind) {
		return nil
	}
	return fmt.Errorf("%w: send %q to %q: definition %q handles no event %q in any state: %w",
		stead.ErrInvalid, kind, exe.ID, exe.DefinitionID, kind, errWouldDrop)
}
