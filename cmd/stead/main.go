package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line and returns the exit code: errors are printed as one line on
// stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "stead: "+oneLine(err))
		var ue usageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		var ce codedError
		if errors.As(err, &ce) {
			return ce.code
		}
		return exitError
	}
	return exitOK
}

// usageError marks a mistake on the command line (exit code 2).
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "stead",
		Short: "Durable statecharts on SQLite or PostgreSQL",
		Long: `stead keeps the durable state of statechart executions on SQLite or PostgreSQL and runs
them with workers. Start with:

  stead demo

which runs a bundled order flow for 2,000 executions on a SQLite file in the current directory.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newDemo(), newRun(), newStart(), newSend(), newMigrate(),
		newInspect(), newDiagram(), newBench(), newServe(), newDefs(),
	)
	root.AddCommand(controlCommands()...)
	root.AddCommand(newPurge(), newDemoOperate())
	root.AddCommand(newTurns())
	root.AddCommand(newBulk())
	root.AddCommand(newDoctor())
	return root
}

// exactArgs is cobra.ExactArgs with a usage error.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Errorf("%s: want %s, got %d argument(s)", cmd.CommandPath(), names, len(args))}
		}
		return nil
	}
}
