package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead/cli/backend"
	"github.com/steadhq/stead/schedule"
	"github.com/steadhq/stead/schedule/schedworker"
	"github.com/steadhq/stead/worker"
)

// newSchedule is `stead schedule`: durable schedules kept in the store, fired by `stead run`.
func newSchedule() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Create, list and control schedules that start executions on a timetable",
		Long: `schedule manages the store's schedules. A schedule starts executions of a definition on a cron
expression (5 fields, or 6 with seconds first; --tz names its time zone) or a fixed interval
(--every). Every "stead run" process fires the schedules of its store: each tick fires exactly
once however many run, and its execution's id is <schedule id>@<tick time in RFC 3339, UTC>.`,
	}
	cmd.AddCommand(newScheduleCreate(), newScheduleUpdate(), newScheduleList(), newScheduleShow(),
		newScheduleSet("pause", "Pause a schedule: no tick fires until resume", (*schedule.Store).Pause),
		newScheduleSet("resume", "Resume a paused schedule from its next tick after now", (*schedule.Store).Resume),
		newScheduleTrigger(), newScheduleBackfill(), newScheduleDelete())
	return cmd
}

// openSchedules opens the store of sf and its schedules.
func openSchedules(ctx context.Context, sf *storeFlags) (*backend.Backend, *schedule.Store, error) {
	b, err := sf.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	s, err := schedule.For(b.Store)
	if err != nil {
		b.Close()
		return nil, nil, err
	}
	return b, s, nil
}

func newScheduleCreate() *cobra.Command {
	var (
		sf      storeFlags
		sc      schedule.Schedule
		data    string
		overlap string
		catchUp string
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "create --store <sqlite path | postgres URL> <schedule-id> <definition-id> (--cron EXPR [--tz ZONE] | --every DURATION)",
		Short: "Create a schedule",
		Long: `create stores a schedule; its first tick is the first after now. --overlap says what a tick does
while the previous tick's execution runs: skip (default), buffer_one, allow_all or
cancel_previous. --catch-up says which ticks missed while no worker ran are started: latest
(default: the latest once), all (those within --catch-up-window) or none (none older than the
window).`,
		Args: exactArgs(2, "a schedule id and a definition id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc.ID, sc.DefinitionID = args[0], args[1]
			sc.Overlap, sc.CatchUp = schedule.Overlap(overlap), schedule.CatchUp(catchUp)
			if data != "" {
				sc.Context = json.RawMessage(data)
			}
			ctx := cmd.Context()
			b, s, err := openSchedules(ctx, &sf)
			if err != nil {
				return err
			}
			defer b.Close()
			out, err := s.Create(ctx, sc)
			if err != nil {
				return err
			}
			return printSchedules(cmd.OutOrStdout(), asJSON, out)
		},
	}
	sf.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&sc.Cron, "cron", "", `cron expression: "0 9 * * MON-FRI", "*/10 * * * * *" (seconds first), "@daily"`)
	fl.StringVar(&sc.TimeZone, "tz", "", "IANA time zone the cron expression is read in (default UTC)")
	fl.DurationVar(&sc.Every, "every", 0, "fixed interval (\"5m\"); ticks fall on its multiples since the Unix epoch")
	fl.StringVar(&data, "context", "", "JSON object every execution starts with")
	fl.DurationVar(&sc.Jitter, "jitter", 0, "delay each start by up to this much (the same delay in every process)")
	fl.StringVar(&overlap, "overlap", "", "skip, buffer_one, allow_all or cancel_previous (default skip)")
	fl.StringVar(&catchUp, "catch-up", "", "latest, all or none (default latest)")
	fl.DurationVar(&sc.CatchUpWindow, "catch-up-window", 0, "how old a missed tick may be and still start (default 1m)")
	fl.BoolVar(&sc.Paused, "paused", false, "create it paused")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// newScheduleUpdate is `stead schedule update`: the flags given change, the others keep their
// stored values.
func newScheduleUpdate() *cobra.Command {
	var (
		sf                                   storeFlags
		cronExpr, tz, data, overlap, catchUp string
		definition                           string
		every, jitter, window                time.Duration
		asJSON                               bool
	)
	cmd := &cobra.Command{
		Use:   "update --store <sqlite path | postgres URL> <schedule-id> [--cron EXPR] [--tz ZONE] [--every DURATION] [--definition-id ID] [--context JSON] [--jitter D] [--overlap P] [--catch-up P] [--catch-up-window D]",
		Short: "Change a schedule: only the flags given change",
		Long: `update changes the schedule's fields that its flags name and keeps the others: the same flags as
create, and --definition-id for the definition its ticks start. --cron replaces an interval (or the
expression, keeping its zone unless --tz is given) and --every a cron expression with its zone;
--tz alone re-reads the cron expression in another zone; --context '' empties the context. A changed timing takes the next tick from now;
ticks not fired yet under the old one are not caught up.

The write is a compare-and-swap on the schedule's version: when a worker claims a tick (or
another update lands) between the read and the write, update reads the schedule again and applies
its flags to that, so neither write is lost. Invalid values (a cron expression that does not
parse, an unknown zone, a timing with both or neither) are refused and nothing is written.`,
		Args: exactArgs(1, "a schedule id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			changed := false
			for _, name := range []string{"cron", "tz", "every", "definition-id", "context", "jitter", "overlap", "catch-up", "catch-up-window"} {
				changed = changed || fl.Changed(name)
			}
			if !changed {
				return usageError{errors.New("update: nothing to change: give at least one of --cron, --tz, --every, --definition-id, --context, --jitter, --overlap, --catch-up, --catch-up-window")}
			}
			ctx := cmd.Context()
			b, s, err := openSchedules(ctx, &sf)
			if err != nil {
				return err
			}
			defer b.Close()
			out, err := s.Modify(ctx, args[0], func(sc *schedule.Schedule) error {
				if fl.Changed("cron") {
					sc.Cron, sc.Every = cronExpr, 0 // an interval's zone is empty: UTC unless --tz
				}
				if fl.Changed("every") {
					sc.Every = every
					if !fl.Changed("cron") {
						sc.Cron, sc.TimeZone = "", "" // an interval has no zone
					}
				}
				if fl.Changed("tz") {
					sc.TimeZone = tz
				}
				if fl.Changed("definition-id") {
					sc.DefinitionID = definition
				}
				if fl.Changed("context") {
					sc.Context = nil
					if data != "" {
						sc.Context = json.RawMessage(data)
					}
				}
				if fl.Changed("jitter") {
					sc.Jitter = jitter
				}
				if fl.Changed("overlap") {
					sc.Overlap = schedule.Overlap(overlap)
				}
				if fl.Changed("catch-up") {
					sc.CatchUp = schedule.CatchUp(catchUp)
				}
				if fl.Changed("catch-up-window") {
					sc.CatchUpWindow = window
				}
				return nil
			})
			if err != nil {
				return err
			}
			return printSchedules(cmd.OutOrStdout(), asJSON, out)
		},
	}
	sf.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&cronExpr, "cron", "", "new cron expression (replaces an interval)")
	fl.StringVar(&tz, "tz", "", "new IANA time zone of the cron expression")
	fl.DurationVar(&every, "every", 0, "new fixed interval (replaces a cron expression and its zone)")
	fl.StringVar(&definition, "definition-id", "", "new definition id of the executions its ticks start")
	fl.StringVar(&data, "context", "", "new JSON object every execution starts with ('' for none)")
	fl.DurationVar(&jitter, "jitter", 0, "new jitter (0: none)")
	fl.StringVar(&overlap, "overlap", "", "skip, buffer_one, allow_all or cancel_previous")
	fl.StringVar(&catchUp, "catch-up", "", "latest, all or none")
	fl.DurationVar(&window, "catch-up-window", 0, "new catch-up window (0: the default, 1m)")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newScheduleList() *cobra.Command {
	var (
		sf     storeFlags
		after  string
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list --store <sqlite path | postgres URL>",
		Short: "List schedules with their next and last ticks",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			b, s, err := openSchedules(ctx, &sf)
			if err != nil {
				return err
			}
			defer b.Close()
			scs, err := s.List(ctx, after, limit)
			if err != nil {
				return err
			}
			return printSchedules(cmd.OutOrStdout(), asJSON, scs...)
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&after, "after", "", "list the schedules whose ids sort after this one (the next page)")
	cmd.Flags().IntVar(&limit, "limit", 0, fmt.Sprintf("at most this many (default and most %d)", schedule.MaxList))
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newScheduleShow() *cobra.Command {
	var (
		sf     storeFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "show --store <sqlite path | postgres URL> <schedule-id>",
		Short: "Show a schedule",
		Args:  exactArgs(1, "a schedule id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			b, s, err := openSchedules(ctx, &sf)
			if err != nil {
				return err
			}
			defer b.Close()
			sc, err := s.Get(ctx, args[0])
			if err != nil {
				return err
			}
			return printSchedules(cmd.OutOrStdout(), asJSON, sc)
		},
	}
	sf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newScheduleSet(name, short string, op func(*schedule.Store, context.Context, string) (*schedule.Schedule, error)) *cobra.Command {
	var sf storeFlags
	cmd := &cobra.Command{
		Use:   name + " --store <sqlite path | postgres URL> <schedule-id>",
		Short: short,
		Args:  exactArgs(1, "a schedule id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			b, s, err := openSchedules(ctx, &sf)
			if err != nil {
				return err
			}
			defer b.Close()
			sc, err := op(s, ctx, args[0])
			if err != nil {
				return err
			}
			return printSchedules(cmd.OutOrStdout(), false, sc)
		},
	}
	sf.register(cmd)
	return cmd
}

func newScheduleDelete() *cobra.Command {
	var sf storeFlags
	cmd := &cobra.Command{
		Use:   "delete --store <sqlite path | postgres URL> <schedule-id>",
		Short: "Delete a schedule (the executions it started stay)",
		Args:  exactArgs(1, "a schedule id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			b, s, err := openSchedules(ctx, &sf)
			if err != nil {
				return err
			}
			defer b.Close()
			if err := s.Delete(ctx, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", args[0])
			return nil
		},
	}
	sf.register(cmd)
	return cmd
}

// runnerOn is a Runner on the schedules of b that starts and cancels executions through a
// worker.Client, a round's ticks in one batch.
func runnerOn(b *backend.Backend, s *schedule.Store, log *slog.Logger) *schedule.Runner {
	return schedworker.Runner(s, &worker.Client{Store: b.Store, Transport: b.Transport, Logger: log})
}

func newScheduleTrigger() *cobra.Command {
	var sf storeFlags
	cmd := &cobra.Command{
		Use:   "trigger --store <sqlite path | postgres URL> <schedule-id>",
		Short: "Start an execution of a schedule now, outside its ticks",
		Long: `trigger starts an execution of the schedule's definition with its context now, under the id
<schedule id>@manual-<now>. It moves neither the next tick nor what the overlap policy looks at.
It prints the execution id.`,
		Args: exactArgs(1, "a schedule id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			b, s, err := openSchedules(ctx, &sf)
			if err != nil {
				return err
			}
			defer b.Close()
			exe, err := runnerOn(b, s, nil).Trigger(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), exe.ID)
			return nil
		},
	}
	sf.register(cmd)
	return cmd
}

func newScheduleBackfill() *cobra.Command {
	var (
		sf       storeFlags
		from, to string
	)
	cmd := &cobra.Command{
		Use:   "backfill --store <sqlite path | postgres URL> <schedule-id> --from TIME --to TIME",
		Short: "Start the ticks of a past range that did not fire",
		Long: fmt.Sprintf(`backfill starts the schedule's ticks in [--from, --to) (RFC 3339 times) under the ids the ticks
would have had, so a tick that fired is not started again: running it twice starts nothing the
second time. At most %d ticks. It prints the ids of the executions it started.`, schedule.MaxBackfill),
		Args: exactArgs(1, "a schedule id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := time.Parse(time.RFC3339Nano, from)
			if err != nil {
				return usageError{fmt.Errorf("--from %q: want an RFC 3339 time", from)}
			}
			t, err := time.Parse(time.RFC3339Nano, to)
			if err != nil {
				return usageError{fmt.Errorf("--to %q: want an RFC 3339 time", to)}
			}
			ctx := cmd.Context()
			b, s, err := openSchedules(ctx, &sf)
			if err != nil {
				return err
			}
			defer b.Close()
			ids, err := runnerOn(b, s, nil).Backfill(ctx, args[0], f, t)
			for _, id := range ids {
				fmt.Fprintln(cmd.OutOrStdout(), id)
			}
			return err
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&from, "from", "", "first time of the range (RFC 3339)")
	cmd.Flags().StringVar(&to, "to", "", "end of the range, excluded (RFC 3339)")
	return cmd
}

// scheduleJSON is a schedule as --json prints it.
type scheduleJSON struct {
	ID              string          `json:"id"`
	DefinitionID    string          `json:"definition_id"`
	Context         json.RawMessage `json:"context,omitempty"`
	Cron            string          `json:"cron,omitempty"`
	TimeZone        string          `json:"time_zone,omitempty"`
	Every           string          `json:"every,omitempty"`
	Jitter          string          `json:"jitter,omitempty"`
	Overlap         string          `json:"overlap"`
	CatchUp         string          `json:"catch_up"`
	CatchUpWindow   string          `json:"catch_up_window"`
	Paused          bool            `json:"paused"`
	NextTick        time.Time       `json:"next_tick"`
	LastTick        *time.Time      `json:"last_tick,omitempty"`
	LastExecutionID string          `json:"last_execution_id,omitempty"`
	Version         int64           `json:"version"`
}

func timing(sc *schedule.Schedule) string {
	if sc.Every > 0 {
		return "every " + sc.Every.String()
	}
	return sc.Cron + " (" + sc.TimeZone + ")"
}

func printSchedules(w io.Writer, asJSON bool, scs ...*schedule.Schedule) error {
	if asJSON {
		out := make([]scheduleJSON, 0, len(scs))
		for _, sc := range scs {
			j := scheduleJSON{ID: sc.ID, DefinitionID: sc.DefinitionID, Context: sc.Context, Cron: sc.Cron,
				TimeZone: sc.TimeZone, Overlap: string(sc.Overlap), CatchUp: string(sc.CatchUp),
				CatchUpWindow: sc.CatchUpWindow.String(), Paused: sc.Paused, NextTick: sc.NextTick,
				LastExecutionID: sc.LastExecutionID, Version: sc.Version}
			if sc.Every > 0 {
				j.Every = sc.Every.String()
			}
			if sc.Jitter > 0 {
				j.Jitter = sc.Jitter.String()
			}
			if !sc.LastTick.IsZero() {
				j.LastTick = &sc.LastTick
			}
			out = append(out, j)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if len(scs) == 1 {
			return enc.Encode(out[0])
		}
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tDEFINITION\tTIMING\tOVERLAP\tCATCH-UP\tSTATE\tNEXT TICK\tLAST TICK\tLAST EXECUTION")
	for _, sc := range scs {
		state, last := "active", "-"
		if sc.Paused {
			state = "paused"
		}
		if !sc.LastTick.IsZero() {
			last = sc.LastTick.Format(time.RFC3339Nano)
		}
		exe := sc.LastExecutionID
		if exe == "" {
			exe = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s %s\t%s\t%s\t%s\t%s\n", sc.ID, sc.DefinitionID, timing(sc), sc.Overlap,
			sc.CatchUp, sc.CatchUpWindow, state, sc.NextTick.Format(time.RFC3339Nano), last, exe)
	}
	return tw.Flush()
}

// startSchedules runs a Runner on the schedules of b until the returned stop is called, which
// waits for it to return: `stead run` fires its store's schedules beside its worker.
func startSchedules(ctx context.Context, b *backend.Backend, log *slog.Logger) (stop func(), err error) {

	s, err := schedule.For(b.Store)
	if err != nil {
		// A backend that keeps no schedules still runs its worker: schedules are an addition.
		log.Warn("schedules not fired: this store keeps none", slog.Any("err", err))
		return func() {}, nil
	}
	r := runnerOn(b, s, log)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Run returns only once it stops, always with an error: ctx's, or its wait's.
		if err := r.Run(rctx); !errors.Is(err, context.Canceled) {
			log.Warn("schedule runner stopped", slog.Any("err", err))
		}
	}()
	return func() { cancel(); <-done }, nil
}
