package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead/chart"
)

// Config is what a stead binary is built from: the definitions compiled into it and the actions
// and guards they (and the definition files given on its command line) call.
type Config struct {
	// Name is the command's name in usage lines and error messages (default: the name the
	// process was started under, for Main; "stead" for Run and Command).
	Name string
	// Definitions are compiled into the binary: every command that takes --definition loads
	// them when none is given, and --definition <id> names one of them.
	Definitions []*chart.Definition
	// Registry holds the actions and guards of Definitions and of the definition files given
	// with --definition. A definition that calls an action it lacks can still be inspected,
	// listed, drawn, sent to, served read-only and purged; the commands that run it (run, start,
	// reset, set-state, retry) refuse with the names of the missing actions. Nil means none.
	Registry *chart.Registry
	// Commands returns commands to add beside stead's own, for a binary's own tools. It is
	// called for every tree Command builds, so that each gets commands whose flags were never
	// parsed. They report a usage mistake with Usagef (exit 2) and choose an exit code with
	// ExitError.
	Commands func() []*cobra.Command
}

func (c Config) name() string {
	if c.Name == "" {
		return "stead"
	}
	return c.Name
}

// Main runs the command line of the process with cfg and exits with its exit code. SIGINT and
// SIGTERM cancel the command's context: a worker finishes its steps in flight and exits.
func Main(cfg Config) {
	if cfg.Name == "" && len(os.Args) > 0 {
		cfg.Name = filepath.Base(os.Args[0])
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, cfg, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Run executes the command line args with cfg and returns the exit code: 0 on success, 1 on an
// error, 2 on a usage mistake, and 3 and 4 for the control and purge commands (see their help).
// An error is printed as one line on stderr, prefixed by the command's name once.
func Run(ctx context.Context, cfg Config, args []string, stdout, stderr io.Writer) int {
	root := Command(cfg, stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, cfg.name()+": "+Message(err))
		var ue usageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		var ce *ExitError
		if errors.As(err, &ce) {
			return ce.Code
		}
		return exitError
	}
	return exitOK
}

// usageError marks a mistake on the command line (exit code 2).
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

// Usagef returns an error that ends a command with exit code 2, a mistake on its command line.
func Usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// prefixes are the package names the library's errors start their text with, which wrapped one
// in another stutter ("chart: stead: invalid input"); Message drops them, since the line on
// stderr names the program once. The backends' names (pgtransport: ...) stay: they say which
// component failed.
var prefixes = map[string]bool{"stead": true, "chart": true, "worker": true}

// Message is err's text on one line with the library's package prefixes removed wherever they
// were stacked, so that a message carries each prefix once: the caller adds its own.
func Message(err error) string {
	parts := strings.Split(strings.Join(strings.Fields(err.Error()), " "), ": ")
	out := parts[:0]
	for _, p := range parts {
		if prefixes[p] {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ": ")
}

// oneLine is Message, for the lines the commands print about one execution or tree.
func oneLine(err error) string { return Message(err) }

// Command returns the root of the command tree cfg builds, writing to stdout and stderr. Run
// executes it; use it directly to embed the tree in a larger one.
func Command(cfg Config, stdout, stderr io.Writer) *cobra.Command {
	a := &app{cfg: cfg}
	name := cfg.name()
	root := &cobra.Command{
		Use:   name,
		Short: "Durable statecharts on SQLite or PostgreSQL",
		Long: name + ` keeps the durable state of statechart executions on SQLite or PostgreSQL and runs
them with workers.

Getting started needs no database server: SQLite is built in. Create a store and run a worker:

  ` + name + ` migrate --store app.db      # creates app.db (any other command: add --create)
  ` + name + ` run     --store app.db      # workers for the definitions in this binary
  ` + name + ` start   --store app.db <definition-id> --context '{...}'

For PostgreSQL, give --store postgres://user@host:5432/db (the server must be running: on
Debian, apt-get install postgresql, then pg_ctlcluster <version> main start).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		a.newRun(), a.newStart(), a.newSend(), newMigrate(),
		newInspect(), a.newDiagram(), a.newServe(), a.newDefs(),
	)
	root.AddCommand(a.controlCommands()...)
	root.AddCommand(newPurge())
	root.AddCommand(newTurns(), newBulk(), newDoctor())
	root.AddCommand(newSchedule())
	root.AddCommand(newVersion(name))
	var own []*cobra.Command
	if cfg.Commands != nil {
		own = cfg.Commands()
	}
	root.AddCommand(own...)
	root.Long += demoLine(own, name)
	return root
}

// app is one command tree's configuration, shared by its commands.
type app struct {
	cfg Config
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

// demoLine points at a demo command when the binary has one (the stock stead does).
func demoLine(cmds []*cobra.Command, name string) string {
	for _, c := range cmds {
		if c.Name() == "demo" {
			return "\n\nOr see it work first, on a SQLite file it makes here:\n\n  " + name + " demo"
		}
	}
	return ""
}
