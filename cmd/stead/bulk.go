package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/bulk"
	"github.com/steadhq/stead/cmd/stead/internal/backend"
	"github.com/steadhq/stead/worker"
)

// newBulk is `stead bulk`: operations over many executions as durable jobs (package bulk).
func newBulk() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bulk",
		Short: "Cancel, suspend, resume, retry, send to or purge many executions as a durable job",
		Long: `A bulk job applies one operation to every execution a selection matches, page by page,
as an execution of its own (definition stead.bulk) that the workers of "stead run" carry out:
it survives their crashes and restarts, applies nothing twice (each target applies the job's
command id once), keeps to --rate, and reports its progress. Pause, resume and cancel it with
"stead bulk pause|resume|cancel"; "stead bulk status --wait" follows it with a progress bar.

Exit codes: 0 success; 1 an error; 2 a usage mistake; 3 the job ended with some targets
refused (status), or was cancelled; 4 the selection matched no execution (start).`,
	}
	cmd.AddCommand(newBulkStart(), newBulkStatus(), newBulkList(),
		newBulkControl("pause", "Pause a job: no page is applied until it is resumed", bulk.Pause),
		newBulkControl("resume", "Resume a paused job where it stopped", bulk.Resume),
		newBulkControl("cancel", "Cancel a job: what it applied stays applied, nothing more is", bulk.Cancel))
	return cmd
}

// bulkClient is a client that knows the bulk definition, so that Create checks a job's spec.
func bulkClient(b *backend.Backend) *worker.Client {
	machines := worker.Machines{}
	bulk.Register(machines, b.Store, b.Transport, bulk.Options{})
	return &worker.Client{Store: b.Store, Transport: b.Transport, Known: machines}
}

func newBulkStart() *cobra.Command {
	var (
		sf                  storeFlags
		sel                 selectFlags
		op, id, state, sCtx string
		kind, data          string
		rate                float64
		page                int
		dryRun, wait        bool
	)
	ops := make([]string, 0, len(bulk.Ops()))
	for _, o := range bulk.Ops() {
		ops = append(ops, string(o))
	}
	cmd := &cobra.Command{
		Use:   "start --store <sqlite path | postgres URL> --op <operation> <selection> [--rate N] [--dry-run]",
		Short: "Start a bulk job over a selection (or count it with --dry-run)",
		Long: `start checks the job, counts the executions the selection matches by status, and starts
the job (its id is printed). --dry-run prints the count and writes nothing. Select with
--definition-id, --status, --id-prefix and the time windows (roots only unless
--include-children). Operations: ` + strings.Join(ops, ", ") + `.`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !sel.set() {
				return usageError{errors.New("bulk start: select with --definition-id, --status, --id-prefix or a time window")}
			}
			filter, err := sel.filter(time.Now())
			if err != nil {
				return err
			}
			spec := bulk.Spec{ID: id, Op: bulk.Op(op), Filter: filter, State: state, EventKind: kind, Rate: rate, PageSize: page}
			if sCtx != "" {
				spec.Context = json.RawMessage(sCtx)
			}
			if data != "" {
				spec.EventData = json.RawMessage(data)
			}
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			b, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer b.Close()
			est, err := bulk.DryRun(ctx, b.Store, spec)
			if errors.Is(err, stead.ErrInvalid) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "%s: %d match (%s), %d take it\n", op, est.Matched, byStatus(est.ByStatus), est.Eligible)
			if dryRun {
				return nil
			}
			if est.Matched == 0 {
				return codedError{exitNoTarget, fmt.Errorf("bulk start: %w: no execution matches the selection", stead.ErrNotFound)}
			}
			client := bulkClient(b)
			j, err := bulk.Start(ctx, client, spec)
			if err != nil && j.ID == "" {
				return err
			}
			fmt.Fprintf(out, "job %s started (run workers with \"stead run\" to carry it out)\n", j.ID)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", oneLine(err))
			}
			if !wait {
				return nil
			}
			return followJob(ctx, b.Store, j.ID, cmd.ErrOrStderr(), out)
		},
	}
	sf.register(cmd)
	sel.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&op, "op", "", "the operation: "+strings.Join(ops, ", ")+" (required)")
	fl.StringVar(&id, "id", "", "the job's id (default: a fresh one, printed)")
	fl.StringVar(&state, "state", "", "set-state: the path of the state to move to")
	fl.StringVar(&sCtx, "context", "", "reset: the context to start from, a JSON object (default: each one's start context)")
	fl.StringVar(&kind, "event", "", "send: the kind of the event to send")
	fl.StringVar(&data, "data", "", "send: the event's data, JSON")
	fl.Float64Var(&rate, "rate", 0, "at most this many executions a second (0: no bound)")
	fl.IntVar(&page, "page", 0, fmt.Sprintf("executions a step applies at most (default %d)", bulk.DefaultPageSize))
	fl.BoolVar(&dryRun, "dry-run", false, "count what the selection matches and write nothing")
	fl.BoolVar(&wait, "wait", false, "follow the job with a progress bar until it ends")
	return cmd
}

func newBulkStatus() *cobra.Command {
	var (
		sf         storeFlags
		wait, asJS bool
	)
	cmd := &cobra.Command{
		Use:   "status --store <sqlite path | postgres URL> <job-id> [--wait]",
		Short: "Show a job's progress (--wait: follow it until it ends)",
		Args:  exactArgs(1, "<job-id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			b, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer b.Close()
			if wait {
				return followJob(ctx, b.Store, args[0], cmd.ErrOrStderr(), out)
			}
			j, err := bulk.Get(ctx, b.Store, args[0])
			if err != nil {
				return err
			}
			if asJS {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(j)
			}
			printJob(out, j)
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().BoolVar(&wait, "wait", false, "follow the job with a progress bar until it ends")
	cmd.Flags().BoolVar(&asJS, "json", false, "print the job as JSON")
	return cmd
}

func newBulkList() *cobra.Command {
	var (
		sf       storeFlags
		statuses []string
		limit    int
	)
	cmd := &cobra.Command{
		Use:   "list --store <sqlite path | postgres URL> [--status running]",
		Short: "List bulk jobs with their progress, in id order",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			sts, err := parseStatuses(statuses)
			if err != nil {
				return err
			}
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			b, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer b.Close()
			cursor, shown := "", 0
			for shown < limit {
				jobs, next, err := bulk.List(ctx, b.Store, sts, min(limit-shown, stead.MaxListLimit), cursor)
				if err != nil {
					return err
				}
				for _, j := range jobs {
					fmt.Fprintf(out, "%-28s %-10s %-9s %s\n", j.ID, j.Status, j.Spec.Op, progressText(j.Progress))
				}
				shown += len(jobs)
				if cursor = next; next == "" {
					break
				}
			}
			if shown == 0 {
				fmt.Fprintln(out, "no bulk jobs")
			}
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().StringArrayVar(&statuses, "status", nil, "only jobs with these statuses (repeatable or comma-separated)")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many jobs")
	return cmd
}

func newBulkControl(name, short string, do func(context.Context, *worker.Client, string) (bulk.Job, error)) *cobra.Command {
	var sf storeFlags
	cmd := &cobra.Command{
		Use:   name + " --store <sqlite path | postgres URL> <job-id>",
		Short: short,
		Args:  exactArgs(1, "<job-id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			b, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer b.Close()
			j, err := do(ctx, bulkClient(b), args[0])
			if err != nil {
				return err
			}
			printJob(cmd.OutOrStdout(), j)
			return nil
		},
	}
	sf.register(cmd)
	return cmd
}

// followJob draws the job's progress on w until it ends, then prints its summary on out. The
// exit code says how it ended: 0 done, 3 done with refusals or cancelled.
func followJob(ctx context.Context, s *stead.Store, id string, w, out io.Writer) error {
	redraw := isTerminal(w)
	last := ""
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		j, err := bulk.Get(ctx, s, id)
		if err != nil {
			return err
		}
		line := progressLine(j)
		switch {
		case redraw:
			fmt.Fprintf(w, "\r\033[K%s", line)
		case line != last:
			fmt.Fprintln(w, line)
		}
		last = line
		if j.Status.Finished() {
			if redraw {
				fmt.Fprintln(w)
			}
			printJob(out, j)
			switch {
			case j.Status == stead.StatusCancelled:
				return refusedf("bulk job %s was cancelled", id)
			case j.Progress.Refused > 0:
				return refusedf("bulk job %s: %d refused", id, j.Progress.Refused)
			case j.Status != stead.StatusDone:
				return fmt.Errorf("bulk job %s ended %s", id, j.Status)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			if redraw {
				fmt.Fprintln(w)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// progressLine is a progress bar with the counts: "[#####.....]  50% 500 done ...".
func progressLine(j bulk.Job) string {
	const width = 30
	p := j.Progress
	seen := p.Done + p.Refused
	whole := max(p.Total, seen+p.Remaining, 1)
	if j.Status == stead.StatusDone {
		whole = max(seen, 1)
	}
	fill := int(int64(width) * seen / whole)
	bar := strings.Repeat("#", fill) + strings.Repeat(".", width-fill)
	return fmt.Sprintf("[%s] %3d%%  %s  %s", bar, 100*seen/whole, progressText(p), j.Status)
}

func progressText(p bulk.Progress) string {
	return fmt.Sprintf("%d done, %d refused, %d remaining", p.Done, p.Refused, p.Remaining)
}

func printJob(out io.Writer, j bulk.Job) {
	status := string(j.Status)
	if j.Outcome != "" {
		status += " (" + j.Outcome + ")"
	}
	fmt.Fprintf(out, "job %s: %s %s, %s\n", j.ID, j.Spec.Op, status, progressText(j.Progress))
	fmt.Fprintf(out, "  of %d matched at the start, in %d pages", j.Progress.Total, j.Progress.Pages)
	if j.Spec.Rate > 0 {
		fmt.Fprintf(out, ", at most %g a second", j.Spec.Rate)
	}
	if j.Progress.Repeats > 0 {
		fmt.Fprintf(out, "; %d of the done had applied it already (a page applied again after a crash, or a parent's cascade)", j.Progress.Repeats)
	}
	fmt.Fprintln(out)
	for _, r := range j.Progress.ReasonsByCount() {
		fmt.Fprintf(out, "  refused %d: %s\n", j.Progress.Reasons[r], r)
	}
	for _, r := range j.Progress.Refusals {
		fmt.Fprintf(out, "  refused %s: %s\n", r.ExecutionID, r.Reason)
	}
}

func byStatus(m map[stead.Status]int64) string {
	var parts []string
	for _, st := range []stead.Status{stead.StatusPending, stead.StatusRunning, stead.StatusSuspended,
		stead.StatusFailed, stead.StatusCancelling, stead.StatusCancelled, stead.StatusDone} {
		if m[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[st], st))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
