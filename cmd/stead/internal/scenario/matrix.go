package scenario

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Matrix is the whole scenario: every backend and mode at every concurrency.
type Matrix struct {
	// SQLite runs the SQLite rows (each on a fresh file in a temporary directory).
	SQLite bool
	// Postgres, when set, runs the PostgreSQL rows on that server (each in a fresh schema,
	// dropped afterwards) and the pgbench ceiling.
	Postgres    string
	Executions  int
	EventsPer   int
	Concurrency []int
	// Batch is the batch size of the batched rows (unbatched rows use 1).
	Batch int
	// RunTimeout cuts each row's drain (0: Config's default); a cut row reports the rate of
	// what it processed and is marked partial.
	RunTimeout time.Duration
	// Trickle, when positive, adds one latency row per backend and mode (at the first
	// concurrency): a small backlog, then that many single events sent to the idle worker with
	// NOTIFY on, measuring publish→commit.
	Trickle int
	// PgbenchFor is how long each pgbench ceiling runs (0 skips it).
	PgbenchFor time.Duration
	// Telemetry runs every throughput row twice, with telemetry off and on (Config.Telemetry),
	// one after the other and in alternating order, and Markdown adds their ratios.
	Telemetry bool
	// Trace makes every step of every row record a trace step (Config.Trace).
	Trace bool
	// Progress receives one line per finished row (may be nil).
	Progress io.Writer
	Logger   *slog.Logger
}

// Row is one line of the report.
type Row struct {
	Result
	// Ceiling is pgbench's single-row-update rate at the same concurrency (PostgreSQL rows).
	Ceiling float64
	Err     error
	// Latency marks an idle-latency row (Matrix.Trickle): only IdleP50/IdleP99 matter.
	Latency bool
}

// RunMatrix runs every row and returns them in order; a failed row carries its error and the
// others still run.
func RunMatrix(ctx context.Context, m Matrix) ([]Row, error) {
	var rows []Row
	progress := func(r Row) {
		rows = append(rows, r)
		if m.Progress != nil {
			fmt.Fprintln(m.Progress, r.line())
		}
	}
	if m.Trickle > 0 && len(m.Concurrency) > 0 {
		if err := latencyRows(ctx, m, progress); err != nil {
			return rows, err
		}
	}
	// Telemetry off and on, or only off; the order swaps with every row pair, so that neither side
	// always runs first.
	pairs := 0
	settings := func() []bool {
		if !m.Telemetry {
			return []bool{false}
		}
		pairs++
		if pairs%2 == 0 {
			return []bool{true, false}
		}
		return []bool{false, true}
	}
	for _, c := range m.Concurrency {
		if m.SQLite {
			for _, shared := range []bool{false, true} { // shared: the finisher's one transaction
				for _, batch := range []int{1, m.Batch} {
					for _, on := range settings() {
						dir, err := os.MkdirTemp("", "stead-bench")
						if err != nil {
							return rows, err
						}
						res, err := Run(ctx, Config{Store: filepath.Join(dir, "bench.db"), Executions: m.Executions,
							EventsPer: m.EventsPer, Concurrency: c, BatchSize: batch, SharedTx: shared, Logger: m.Logger,
							Timeout: m.RunTimeout, Telemetry: on, Trace: m.Trace})
						os.RemoveAll(dir)
						if res.Backend == "" {
							res.Backend = "sqlite"
						}
						progress(Row{Result: res, Err: err})
						if ctx.Err() != nil {
							return rows, ctx.Err()
						}
					}
				}
			}
		}
		if m.Postgres == "" {
			continue
		}
		var ceiling float64
		if m.PgbenchFor > 0 {
			schema := scratchSchema()
			tps, err := PgbenchCeiling(ctx, m.Postgres, schema, c, m.Executions, m.PgbenchFor)
			dropSchema(m.Postgres, schema)
			if err != nil {
				progress(Row{Result: Result{Backend: "pgbench", Mode: "ceiling", Concurrency: c}, Err: err})
			} else {
				ceiling = tps
				progress(Row{Result: Result{Backend: "pgbench", Mode: "single-row UPDATE", Concurrency: c, PerSecond: tps, BatchSize: 1}})
			}
		}
		for _, shared := range []bool{false, true} {
			for _, batch := range []int{1, m.Batch} {
				for _, on := range settings() {
					schema := scratchSchema()
					res, err := Run(ctx, Config{Store: m.Postgres, Schema: schema, Executions: m.Executions,
						EventsPer: m.EventsPer, Concurrency: c, BatchSize: batch, SharedTx: shared, Logger: m.Logger,
						Timeout: m.RunTimeout, Telemetry: on, Trace: m.Trace})
					dropSchema(m.Postgres, schema)
					if res.Backend == "" {
						res.Backend = "postgres"
					}
					progress(Row{Result: res, Ceiling: ceiling, Err: err})
					if ctx.Err() != nil {
						return rows, ctx.Err()
					}
				}
			}
		}
	}
	return rows, nil
}

// latencyRows measures the idle pipeline: publish→commit of single events, one at a time.
func latencyRows(ctx context.Context, m Matrix, progress func(Row)) error {
	c := m.Concurrency[0]
	type mode struct {
		pg, shared bool
		batch      int
	}
	var modes []mode
	if m.SQLite {
		modes = append(modes, mode{false, false, 1}, mode{false, false, m.Batch})
	}
	if m.Postgres != "" {
		modes = append(modes, mode{true, false, 1}, mode{true, false, m.Batch}, mode{true, true, 1}, mode{true, true, m.Batch})
	}
	for _, md := range modes {
		cfg := Config{Executions: 100, EventsPer: 1, Concurrency: c, BatchSize: md.batch, SharedTx: md.shared,
			Notify: true, Trickle: m.Trickle, Logger: m.Logger, Timeout: m.RunTimeout}
		var cleanup func()
		if md.pg {
			cfg.Store, cfg.Schema = m.Postgres, scratchSchema()
			cleanup = func() { dropSchema(m.Postgres, cfg.Schema) }
		} else {
			dir, err := os.MkdirTemp("", "stead-bench")
			if err != nil {
				return err
			}
			cfg.Store = filepath.Join(dir, "latency.db")
			cleanup = func() { os.RemoveAll(dir) }
		}
		res, err := Run(ctx, cfg)
		cleanup()
		if res.Backend == "" {
			res.Backend = "sqlite"
			if md.pg {
				res.Backend = "postgres"
			}
		}
		progress(Row{Result: res, Err: err, Latency: true})
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

func scratchSchema() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return "stead_bench_" + hex.EncodeToString(b[:])
}

func dropSchema(dsn, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
}

func (r Row) line() string {
	if r.Err != nil {
		return fmt.Sprintf("%-8s %-22s c=%-3d  error: %v", r.Backend, r.ModeName(), r.Concurrency, r.Err)
	}
	if r.Backend == "pgbench" {
		return fmt.Sprintf("%-8s %-22s c=%-3d  %8.0f tps", r.Backend, r.Mode, r.Concurrency, r.PerSecond)
	}
	if r.Latency {
		return fmt.Sprintf("%-8s %-22s c=%-3d  idle publish→commit p50 %v  p99 %v", r.Backend, r.ModeName(), r.Concurrency,
			r.IdleP50.Round(10*time.Microsecond), r.IdleP99.Round(10*time.Microsecond))
	}
	return fmt.Sprintf("%-8s %-22s c=%-3d  %8.0f events/s  %8.0f events/CPU-s  p50 %v  p99 %v  peak heap %.1f MiB%s",
		r.Backend, r.ModeName(), r.Concurrency, r.PerSecond, r.perCPU(), r.P50.Round(time.Millisecond),
		r.P99.Round(time.Millisecond), float64(r.PeakHeap)/(1<<20), r.partial())
}

// Markdown renders rows as tables: idle latency first (if measured), then throughput.
func Markdown(rows []Row) string {
	var b strings.Builder
	var lat, thr []Row
	for _, r := range rows {
		if r.Latency {
			lat = append(lat, r)
		} else {
			thr = append(thr, r)
		}
	}
	if len(lat) > 0 {
		b.WriteString("| backend | mode | loops | idle publish→commit p50 | p99 |\n|---|---|---:|---:|---:|\n")
		for _, r := range lat {
			if r.Err != nil {
				fmt.Fprintf(&b, "| %s | %s | %d | error: %s | |\n", r.Backend, r.ModeName(), r.Concurrency, strings.ReplaceAll(r.Err.Error(), "|", "/"))
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %v | %v |\n", r.Backend, r.ModeName(), r.Concurrency,
				r.IdleP50.Round(10*time.Microsecond), r.IdleP99.Round(10*time.Microsecond))
		}
		b.WriteString("\n")
	}
	rows = thr
	b.WriteString("| backend | mode | loops | events | elapsed | events/s | vs pgbench | events per worker CPU-s | p50 publish→commit | p99 | peak heap |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		switch {
		case r.Err != nil:
			fmt.Fprintf(&b, "| %s | %s | %d | | | error: %s | | | | | |\n", r.Backend, r.ModeName(), r.Concurrency,
				strings.ReplaceAll(r.Err.Error(), "|", "/"))
		case r.Backend == "pgbench":
			fmt.Fprintf(&b, "| pgbench | single-row UPDATE (ceiling) | %d | | | %.0f tps | 1.00 | | | | |\n", r.Concurrency, r.PerSecond)
		default:
			vs := ""
			if r.Ceiling > 0 {
				vs = fmt.Sprintf("%.2f", r.PerSecond/r.Ceiling)
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %d%s | %.2fs | %.0f | %s | %.0f | %v | %v | %.1f MiB |\n", r.Backend, r.ModeName(),
				r.Concurrency, r.Events, r.partial(), r.Elapsed.Seconds(), r.PerSecond, vs, r.perCPU(), r.P50.Round(time.Millisecond),
				r.P99.Round(time.Millisecond), float64(r.PeakHeap)/(1<<20))
		}
	}
	b.WriteString(telemetryRatios(rows))
	return b.String()
}

// telemetryRatios renders, for every row measured with telemetry off and on, the cost of turning
// it on: on ÷ off of the time an event took (wall) and of the CPU this process spent an event.
func telemetryRatios(rows []Row) string {
	type key struct {
		backend, mode string
		loops, batch  int
	}
	off := map[key]Row{}
	for _, r := range rows {
		if r.Err == nil && !r.Telemetry && r.Events > 0 {
			off[key{r.Backend, r.Mode, r.Concurrency, r.BatchSize}] = r
		}
	}
	var b strings.Builder
	for _, on := range rows {
		k := key{on.Backend, on.Mode, on.Concurrency, on.BatchSize}
		o, ok := off[k]
		if on.Err != nil || !on.Telemetry || !ok || on.Events == 0 || on.PerSecond == 0 || on.perCPU() == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\n| backend | mode | loops | telemetry on ÷ off: time an event | worker CPU an event | spans exported |\n" +
				"|---|---|---:|---:|---:|---:|\n")
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.3f | %.3f | %d |\n", on.Backend, o.ModeName(), on.Concurrency,
			o.PerSecond/on.PerSecond, o.perCPU()/on.perCPU(), on.Spans)
	}
	return b.String()
}

func (r Row) partial() string {
	if r.Partial {
		return " (partial: cut by the time limit)"
	}
	return ""
}

func (r Row) perCPU() float64 {
	if r.CPU <= 0 {
		return 0
	}
	return float64(r.Events) / r.CPU.Seconds()
}
