package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead"
)

func newInspect() *cobra.Command {
	var (
		sf       storeFlags
		defID    string
		statuses []string
		roots    bool
		limit    int
		cursor   string
		asJSON   bool
		where    []string
	)
	cmd := &cobra.Command{
		Use:   "inspect --store <sqlite path | postgres URL> [execution-id]",
		Short: "List executions, or show one",
		Long: `Without an id, inspect lists executions (filter with --definition-id, --status, --roots, --where; page with
--limit and the --cursor it prints). With an id, it shows that execution: status, active path,
context, children, its trace, the outbox entries it emitted that are not delivered yet, and
its armed timers (marked due when their time has come). --json prints the same for scripts.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{fmt.Errorf("%s: want at most one execution id", cmd.CommandPath())}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			b, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer b.Close()
			out := cmd.OutOrStdout()
			if len(args) == 1 {
				return showExecution(ctx, out, b.Store, args[0], asJSON)
			}
			f := stead.ListFilter{DefinitionID: defID, RootsOnly: roots, Limit: limit, Cursor: cursor}
			for _, s := range statuses {
				for _, p := range strings.Split(s, ",") {
					st := stead.Status(strings.TrimSpace(p))
					if !st.Valid() {
						return usageError{fmt.Errorf("--status %q: want pending, running, done, failed, cancelling, cancelled or suspended", p)}
					}
					f.Statuses = append(f.Statuses, st)
				}
			}
			if f.Attributes, err = parseWhere(where); err != nil {
				return err
			}
			page, err := b.Store.List(ctx, f)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out, map[string]any{"items": nonNil(page.Items), "next_cursor": page.NextCursor})
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tDEFINITION\tSTATUS\tOUTCOME\tACTIVE\tVERSION\tUPDATED")
			for _, s := range page.Items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", s.ID, s.DefinitionID, s.Status, dash(s.Outcome),
					dash(s.ActivePath), s.Version, stamp(s.UpdatedAt))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if page.NextCursor != "" {
				fmt.Fprintf(out, "more: --cursor %s\n", page.NextCursor)
			}
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&defID, "definition-id", "", "only executions of this definition id (as stored: \"order\" or \"order@2\")")
	cmd.Flags().StringArrayVar(&statuses, "status", nil, "only these statuses (repeatable or comma-separated)")
	cmd.Flags().BoolVar(&roots, "roots", false, "only root executions (no parent)")
	registerWhere(cmd.Flags(), &where)
	cmd.Flags().IntVar(&limit, "limit", 0, fmt.Sprintf("page size (default %d, at most %d)", stead.DefaultListLimit, stead.MaxListLimit))
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue a listing from the cursor it printed")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// detail is everything inspect shows about one execution.
type detail struct {
	Execution *stead.Execution    `json:"execution"`
	Trace     []stead.TraceStep   `json:"trace"`
	Outbox    []stead.OutboxEntry `json:"pending_outbox"`
	Spawns    []stead.SpawnEntry  `json:"pending_spawns"`
	Timers    []timerView         `json:"timers"`
}

type timerView struct {
	Path   string    `json:"path"`
	FireAt time.Time `json:"fire_at"`
	Due    bool      `json:"due"`
}

func loadDetail(ctx context.Context, s *stead.Store, id string) (*detail, error) {
	exe, err := s.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	d := &detail{Execution: exe}
	if d.Trace, err = s.ReadTrace(ctx, id); err != nil {
		return nil, err
	}
	if d.Outbox, err = s.PendingOutbox(ctx, id, stead.MaxListLimit); err != nil {
		return nil, err
	}
	if d.Spawns, err = s.PendingSpawns(ctx, id, stead.MaxListLimit); err != nil {
		return nil, err
	}
	timers, err := s.Timers(ctx, id)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	d.Timers = []timerView{}
	for _, t := range timers {
		d.Timers = append(d.Timers, timerView{Path: t.Path, FireAt: t.FireAt, Due: !t.FireAt.After(now)})
	}
	d.Trace, d.Outbox, d.Spawns = nonNil(d.Trace), nonNil(d.Outbox), nonNil(d.Spawns)
	return d, nil
}

func showExecution(ctx context.Context, out io.Writer, s *stead.Store, id string, asJSON bool) error {
	d, err := loadDetail(ctx, s, id)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(out, d)
	}
	e := d.Execution
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("execution", e.ID)
	row("definition", e.DefinitionID)
	row("status", string(e.Status))
	if e.Outcome != "" {
		row("outcome", e.Outcome)
	}
	if e.Error != "" {
		row("error", e.Error)
	}
	if d := e.DeadLetter; d != nil {
		// What stead retry applies again, and from where.
		row("dead letter", fmt.Sprintf("%s %s, received at %s", d.Event.Kind, d.Event.ID, dash(d.ActivePath)))
	}
	row("active path", dash(e.ActivePath))
	row("version", fmt.Sprint(e.Version))
	if e.ParentID != "" {
		row("parent", e.ParentID)
	}
	if e.RootPath != "" {
		row("root path", e.RootPath)
	}
	row("created", stamp(e.CreatedAt))
	row("updated", stamp(e.UpdatedAt))
	if !e.FinishedAt.IsZero() {
		row("finished", stamp(e.FinishedAt))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\ncontext\n%s\n", indent(e.Context))
	if len(e.Children) > 0 {
		fmt.Fprintln(out, "\nchildren")
		for cid, c := range e.Children {
			state := "running"
			if c.Finished {
				state = "finished " + c.Outcome
			}
			fmt.Fprintf(out, "  %s  %s  %s\n", cid, c.RootPath, state)
		}
	}
	fmt.Fprintf(out, "\ntimers (%d)\n", len(d.Timers))
	for _, t := range d.Timers {
		due := ""
		if t.Due {
			due = "  (due)"
		}
		fmt.Fprintf(out, "  %s  fires %s%s\n", t.Path, stamp(t.FireAt), due)
	}
	fmt.Fprintf(out, "\npending outbox (%d)\n", len(d.Outbox))
	for _, o := range d.Outbox {
		fmt.Fprintf(out, "  #%d  -> %s  %s  %s\n", o.Seq, dash(o.Target), o.Event.Kind, o.Event.ID)
	}
	if len(d.Spawns) > 0 {
		fmt.Fprintf(out, "\npending spawns (%d)\n", len(d.Spawns))
		for _, sp := range d.Spawns {
			fmt.Fprintf(out, "  #%d  %s  %s\n", sp.Seq, sp.ChildID, sp.RootPath)
		}
	}
	fmt.Fprintf(out, "\ntrace (%d)\n", len(d.Trace))
	if len(d.Trace) == 0 {
		fmt.Fprintln(out, "  "+noTraceHint)
	}
	for _, t := range d.Trace {
		acts := ""
		if len(t.Actions) > 0 {
			acts = "  [" + strings.Join(t.Actions, ", ") + "]"
		}
		fmt.Fprintf(out, "  %3d  %-16s %s -> %s%s\n", t.Index, t.EventKind, dash(t.From), dash(t.To), acts)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func indent(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "  {}"
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "  ", "  "); err != nil {
		return "  " + string(raw)
	}
	return "  " + buf.String()
}

// noTraceHint is what inspect says of an execution without event history. History is off by
// default because it costs: a stored row per step, 10–20 % of a batched worker's rate on SQLite
// in `stead bench --trace` (bench/RESULTS.md).
const noTraceHint = "no steps recorded: event history is off unless the definition says `trace: true` " +
	"or the worker runs with `stead run --trace` (chart.WithTrace); it keeps the last steps up to the store's cap"
