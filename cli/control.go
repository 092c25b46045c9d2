package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/worker"
)

// controlSpec describes one control command of the CLI.
type controlSpec struct {
	op      worker.Op
	short   string
	long    string
	machine bool // reset, set-state and retry run the definition: --definition loads it
}

var controlSpecs = []controlSpec{
	{worker.OpSuspend, "Suspend executions: their events wait, their timers fire into the parked queue",
		`suspend parks running executions and their unfinished children. Workers hand their events
back (a recheck every few seconds) instead of applying them; timers that fall due fire into the
parked queue. resume delivers it all, in order.`, false},
	{worker.OpResume, "Resume suspended executions and their children",
		`resume runs suspended executions and their suspended children again. What was parked, timeouts
included, is delivered in order within the workers' recheck delay.`, false},
	{worker.OpCancel, "Cancel executions and every live descendant, draining what they have queued",
		`cancel is cooperative: the execution becomes cancelling and a cancel event is queued behind its
backlog; workers drop the backlog unapplied, and the cancel event ends it cancelled, running the
exit actions of the states it is in. Every unfinished child is cancelled the same way. A failed
execution is cancelled at once.`, false},
	{worker.OpReset, "Return executions to their initial state",
		`reset returns each execution to its definition's initial configuration, with --context or the
context it started with: timers are disarmed and armed again, children cancelled, history
forgotten; entry actions run, exit actions do not. A suspended execution stays suspended.
--definition names the definitions the executions run (default: those compiled into this
binary); reset runs their entry actions, which the binary must hold.`, true},
	{worker.OpSetState, "Move executions to a named state",
		`set-state moves each execution to --state as a transition from its current state would: exit
actions of the states it leaves, entry actions of those it enters, timers and regions to match.
From a failed execution the state is entered from the top. A suspended execution stays
suspended. --definition names the definitions (default: those compiled into this binary),
whose actions the binary must hold.`, true},
	{worker.OpRetry, "Apply the event that failed an execution again",
		`retry takes each failed execution back to the state it was in when an event failed it, and
applies that event again (its dead letter). --definition names the definitions (default: those
compiled into this binary), whose actions the binary must hold: an execution of one whose
actions it lacks is refused, with their names.`, true},
}

const controlExitCodes = `
Select executions by id, or by listing filter (--definition-id, --status, --id-prefix and the
time windows; roots only unless --include-children). Every command has an id (--command-id,
printed when generated): an execution applies it once, so running the same command again with
the same id skips what it already did, after a crash say.

Exit codes: 0 every execution took the command (or had already); 1 an error; 2 a usage mistake;
3 some executions refused it (their status does not take it, or they do not exist; each is
listed); 4 the selection matched no execution.`

func (a *app) controlCommands() []*cobra.Command {
	out := make([]*cobra.Command, len(controlSpecs))
	for i, s := range controlSpecs {
		out[i] = a.newControl(s)
	}
	return out
}

func (a *app) newControl(spec controlSpec) *cobra.Command {
	var (
		sf          storeFlags
		sel         selectFlags
		defs        []string
		commandID   string
		dryRun      bool
		concurrency int
		state       string
		startCtx    string
	)
	use := string(spec.op) + " --store <sqlite path | postgres URL> (<execution-id>... | selection)"
	if spec.op == worker.OpSetState {
		use = string(spec.op) + " --store <sqlite path | postgres URL> --state <path> (<execution-id>... | selection)"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: spec.short,
		Long:  spec.long + "\n" + controlExitCodes,
		RunE: func(cmd *cobra.Command, ids []string) error {
			now := time.Now()
			if len(ids) == 0 && !sel.set() {
				return usageError{fmt.Errorf("%s: give execution ids, or select with --definition-id, --status, --id-prefix or a time window", spec.op)}
			}
			if len(ids) > 0 && sel.set() {
				return usageError{fmt.Errorf("%s: give execution ids or a selection, not both", spec.op)}
			}
			if spec.op == worker.OpSetState && state == "" {
				return usageError{errors.New("set-state: --state is required")}
			}
			filter, err := sel.filter(now)
			if err != nil {
				return err
			}
			if commandID == "" {
				commandID = "cmd-" + worker.NewEventID()[3:]
			}
			c := worker.Command{Op: spec.op, ID: commandID, State: state}
			if startCtx != "" {
				c.Context = json.RawMessage(startCtx)
			}
			var gate *catalog // the definitions a command that runs one can run
			if spec.machine {
				if gate, err = a.load(defs); err != nil {
					return err
				}
				if m := gate.missing[gate.resolve(sel.definitionID)]; m != nil && len(ids) == 0 {
					return m // the whole selection runs a definition this binary cannot run
				}
			}
			ctx := cmd.Context()
			b, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer b.Close()
			client := &worker.Client{Store: b.Store, Transport: b.Transport}
			if gate != nil {
				// Only the executions of a definition that cannot run are refused: the others
				// take the command.
				client.Known = gate.machines
			}
			out := cmd.OutOrStdout()
			if len(ids) > 0 {
				return controlIDs(cmd, client, gate, ids, c, dryRun)
			}
			pages := 0
			rep, err := client.ControlMatching(ctx, filter, c, worker.BatchOptions{
				DryRun: dryRun, Concurrency: concurrency,
				Progress: func(r worker.BatchReport) {
					// A progress line for runs longer than a page, on stderr beside the results.
					if pages++; pages > 1 {
						fmt.Fprintf(cmd.ErrOrStderr(), "progress: %s\n", batchLine(spec.op, r))
					}
				},
			})
			if rep.Matched == 0 && errors.Is(err, stead.ErrNotFound) {
				return &ExitError{exitNoTarget, err}
			}
			fmt.Fprintf(out, "%s (command %s)\n", batchLine(spec.op, rep), rep.CommandID)
			for _, r := range rep.Refused {
				fmt.Fprintf(out, "  refused %s: %s\n", r.ExecutionID, oneLine(gate.explain(r.Err)))
			}
			if err != nil {
				return err
			}
			if len(rep.Refused) > 0 {
				return refusedf("%s: %d of %d executions refused", spec.op, len(rep.Refused), rep.Matched)
			}
			return nil
		},
	}
	sf.register(cmd)
	sel.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&commandID, "command-id", "", "the command's id: the same id applies once per execution (default: a fresh one, printed)")
	fl.BoolVar(&dryRun, "dry-run", false, "check which executions would take the command, and write nothing")
	fl.IntVar(&concurrency, "concurrency", 8, "executions of a selection commanded at once")
	switch spec.op {
	case worker.OpSetState:
		fl.StringVar(&state, "state", "", "the path of the state to move to (required)")
	case worker.OpReset:
		fl.StringVar(&startCtx, "context", "", "the context to start from, a JSON object (default: the one each execution started with)")
	}
	if spec.machine {
		fl.StringArrayVar(&defs, "definition", nil, definitionHelp)
	}
	return cmd
}

// controlIDs applies the command to each execution named, one line each.
func controlIDs(cmd *cobra.Command, client *worker.Client, gate *catalog, ids []string, c worker.Command, dryRun bool) error {
	ctx, out := cmd.Context(), cmd.OutOrStdout()
	refused := 0
	for _, id := range ids {
		var (
			o   worker.Outcome
			err error
		)
		// The dry run is the command's own checks without its commit: both refuse the same
		// executions for the same reasons.
		if dryRun {
			o, err = client.CheckControl(ctx, id, c)
		} else {
			o, err = client.Control(ctx, id, c)
		}
		err = gate.explain(err)
		switch {
		case errors.Is(err, stead.ErrInvalid) || errors.Is(err, stead.ErrNotFound):
			refused++
			fmt.Fprintf(out, "%s  refused: %s\n", id, oneLine(err))
		case err != nil:
			return fmt.Errorf("%s %s: %w", c.Op, id, err)
		default:
			printOutcome(out, c.Op, o, dryRun)
		}
	}
	fmt.Fprintf(out, "command %s\n", c.ID)
	if refused > 0 {
		return refusedf("%s: %d of %d executions refused", c.Op, refused, len(ids))
	}
	return nil
}

func printOutcome(out io.Writer, op worker.Op, o worker.Outcome, dryRun bool) {
	switch {
	case o.Repeat:
		fmt.Fprintf(out, "%s  %s  version %d  (applied before: nothing changed)\n", o.ExecutionID, o.Status, o.Version)
	case dryRun:
		fmt.Fprintf(out, "%s  would %s (%s)\n", o.ExecutionID, op, o.Status)
	default:
		fmt.Fprintf(out, "%s  %s  version %d\n", o.ExecutionID, o.Status, o.Version)
	}
}

func batchLine(op worker.Op, r worker.BatchReport) string {
	applied := "applied"
	head := string(op)
	if r.DryRun {
		head, applied = head+" (dry run)", "would apply"
	}
	return strings.Join([]string{
		fmt.Sprintf("%s: %d matched", head, r.Matched),
		fmt.Sprintf("%d %s", r.Applied, applied),
		fmt.Sprintf("%d applied before", r.Repeats),
		fmt.Sprintf("%d refused", len(r.Refused)),
	}, ", ")
}
