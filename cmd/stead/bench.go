package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead/cli"
	"github.com/steadhq/stead/cli/backend"
	"github.com/steadhq/stead/cmd/stead/internal/scenario"
)

func newBench() *cobra.Command {
	var (
		postgres    string
		noSQLite    bool
		executions  int
		eventsPer   int
		concurrency string
		batch       int
		pgbenchFor  time.Duration
		limit       time.Duration
		trickle     int
		telemetry   bool
		trace       bool
	)
	cmd := &cobra.Command{
		Use:   "bench [--postgres URL] [--executions N] [--events N] [--concurrency 1,8,32]",
		Short: "Run the end-to-end benchmark scenario",
		Long: `bench publishes a backlog (by default 10,000 executions × 10 events = 100,000 events) and measures
how fast one worker drains it: claim → load → step → commit → relay → ack. It runs SQLite (a
fresh temporary file each) in the separate and the one-transaction mode (each round's commit,
publish and acks in one transaction) and, with --postgres, PostgreSQL in the separate and the
shared-transaction mode (a fresh schema each, dropped afterwards), each unbatched and batched,
at every concurrency, with pgbench's single-row UPDATE rate at the same concurrency beside it.
It prints one line per row as it goes and a Markdown table at the end. With --telemetry every
row runs twice, with the OpenTelemetry SDK off and on (every span sampled and batched to an
exporter that drops them, every instrument aggregated), and the table ends with the ratios.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cs []int
			for _, f := range strings.Split(concurrency, ",") {
				c, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || c < 1 {
					return cli.Usagef("--concurrency %q: want positive integers separated by commas", concurrency)
				}
				cs = append(cs, c)
			}
			if postgres != "" && !backend.IsPostgres(postgres) {
				return cli.Usagef("--postgres %q: want a postgres:// URL", postgres)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "backlog: %d executions × %d events = %d events\n", executions, eventsPer, executions*eventsPer)
			rows, err := scenario.RunMatrix(cmd.Context(), scenario.Matrix{
				SQLite: !noSQLite, Postgres: postgres, Executions: executions, EventsPer: eventsPer,
				Concurrency: cs, Batch: batch, PgbenchFor: pgbenchFor, Progress: out, RunTimeout: limit, Trickle: trickle,
				Telemetry: telemetry, Trace: trace,
			})
			fmt.Fprintln(out)
			fmt.Fprint(out, scenario.Markdown(rows))
			return err
		},
	}
	cmd.Flags().StringVar(&postgres, "postgres", "", "PostgreSQL URL to benchmark (rows are skipped without it)")
	cmd.Flags().BoolVar(&noSQLite, "no-sqlite", false, "skip the SQLite rows")
	cmd.Flags().IntVar(&executions, "executions", 10000, "executions in the backlog")
	cmd.Flags().IntVar(&eventsPer, "events", 10, "events per execution (a start and events-1 ticks)")
	cmd.Flags().StringVar(&concurrency, "concurrency", "1,8,32", "worker claim loops to try, comma-separated")
	cmd.Flags().IntVar(&batch, "batch", 128, "batch size of the batched rows")
	cmd.Flags().IntVar(&trickle, "trickle", 200, "single events sent one at a time to an idle worker per backend and mode, for the idle publish→commit latency (0 skips)")
	cmd.Flags().BoolVar(&trace, "trace", false, "every step records a trace step (event history), as a definition with trace: true does")
	cmd.Flags().BoolVar(&telemetry, "telemetry", false, "run every row with telemetry off and on, and report the cost of turning it on")
	cmd.Flags().DurationVar(&limit, "limit", 10*time.Minute, "cut each row's drain after this long and report the rate so far")
	cmd.Flags().DurationVar(&pgbenchFor, "pgbench-time", 10*time.Second, "how long each pgbench ceiling runs (0 skips it)")
	return cmd
}
