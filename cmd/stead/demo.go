package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/cli"
	"github.com/steadhq/stead/cli/backend"
	"github.com/steadhq/stead/worker"
)

// demoMix is the outcome pattern of the demo orders, repeated: order i takes demoMix[i%20]. It
// makes the outcome counts a function of the number of orders alone.
var demoMix = []string{
	"ok", "ok", "declined", "ok", "timeout", "ok", "out_of_stock", "ok", "ok", "error",
	"ok", "ok", "crash", "ok", "declined", "ok", "timeout", "ok", "out_of_stock", "ok",
}

func newDemo() *cobra.Command {
	var (
		path    string
		orders  int
		workers int
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the bundled order flow for 2,000 orders on a SQLite file here",
		Long: `demo needs no server and no flags. It creates stead-demo.db in the current directory (replacing
an earlier one), starts workers on it, and runs the bundled order flow (stead diagram shows it)
for 2,000 orders: a payment step with a 5-second timer, fulfilment as two parallel regions run as
child executions, and failure paths. The orders' data picks a fixed mix of outcomes, so every
run ends with the same counts. Beside them run 200 deliveries (one per ten orders): each invokes
the bundled carrier machine as a child execution, whose booking action fails its first attempt
and is retried after a backoff. Timers do not make you wait: when the workers are idle and only
timers are left, the demo's clock jumps to the next one (printed when it happens).`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if orders < 1 || orders > 1_000_000 {
				return cli.Usagef("--orders %d: want 1..1000000", orders)
			}
			return runDemo(cmd.Context(), cmd.OutOrStdout(), path, orders, workers)
		},
	}
	cmd.Flags().StringVar(&path, "db", "stead-demo.db", "SQLite file to create (replaced if it exists)")
	cmd.Flags().IntVar(&orders, "orders", 2000, "how many orders to run")
	cmd.Flags().IntVar(&workers, "workers", worker.DefaultConcurrency, "worker claim loops")
	return cmd
}

// demoClock is wall time plus an offset that only grows.
type demoClock struct{ offset atomic.Int64 }

func (c *demoClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

func runDemo(ctx context.Context, out io.Writer, path string, orders, workers int) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if err := os.Remove(abs + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove the previous demo database: %w", err)
		}
	}
	b, err := backend.Open(ctx, abs, backend.Options{})
	if err != nil {
		return err
	}
	defer b.Close()
	// Traced, so that `stead inspect` shows each order's steps afterwards.
	machines, err := sampleMachines([]string{builtinOrder, builtinDelivery, builtinCarrier}, chart.WithTrace())
	if err != nil {
		return err
	}
	// Each round's commit, publish and acks in one SQLite transaction.
	fin, err := b.Finisher(true)
	if err != nil {
		return err
	}
	deliveries := max(1, orders/10)
	clock := &demoClock{}
	var events, finished atomic.Int64
	var done sync.Map // root ids seen finished: a finished order can still commit late events
	w, err := worker.New(worker.Config{
		Store: b.Store, Transport: b.Transport, Machines: machines, Name: "demo",
		Concurrency: workers, Finisher: fin, Clock: clock.Now, IdleWait: 50 * time.Millisecond,
		TimerInterval: 20 * time.Millisecond,
		OnCommit: func(exe *stead.Execution, _ stead.Event, _ time.Time) {
			events.Add(1)
			if exe.ParentID == "" && exe.Status.Finished() {
				if _, seen := done.LoadOrStore(exe.ID, true); !seen {
					finished.Add(1)
				}
			}
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "stead demo: %d orders of the bundled order flow and %d deliveries, %d worker loops, SQLite file %s\n",
		orders, deliveries, workers, path)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	stopped := make(chan error, 1)
	start := time.Now()
	go func() { stopped <- w.Run(runCtx) }()

	client := &worker.Client{Store: b.Store, Transport: b.Transport, Known: machines, Clock: clock.Now}
	for i := 0; i < orders; i += 500 {
		var news []worker.NewExecution
		for j := i; j < min(i+500, orders); j++ {
			id := fmt.Sprintf("order-%05d", j)
			data := fmt.Sprintf(`{"order_id":%q,"amount":%d,"outcome":%q}`, id, 20+j%180, demoMix[j%len(demoMix)])
			news = append(news, worker.NewExecution{DefinitionID: "order", ID: id, Context: []byte(data)})
		}
		if _, err := client.CreateBatch(ctx, news); err != nil {
			stop()
			<-stopped
			return fmt.Errorf("create orders: %w", err)
		}
	}
	// Deliveries invoke the carrier machine, whose booking fails once and is retried.
	for i := 0; i < deliveries; i += 500 {
		var news []worker.NewExecution
		for j := i; j < min(i+500, deliveries); j++ {
			id := fmt.Sprintf("delivery-%05d", j)
			news = append(news, worker.NewExecution{DefinitionID: builtinDelivery, ID: id,
				Context: fmt.Appendf(nil, `{"order_id":"order-%05d"}`, j)})
		}
		if _, err := client.CreateBatch(ctx, news); err != nil {
			stop()
			<-stopped
			return fmt.Errorf("create deliveries: %w", err)
		}
	}

	tty := isTerminal(out)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastEvents, idleTicks, lastPrint := int64(-1), 0, time.Time{}
	for finished.Load() < int64(orders+deliveries) {
		select {
		case <-ctx.Done():
			stop()
			<-stopped
			return ctx.Err()
		case err := <-stopped:
			return fmt.Errorf("worker stopped early: %v", err)
		case <-tick.C:
		}
		n := events.Load()
		if n == lastEvents {
			idleTicks++
		} else {
			idleTicks = 0
		}
		lastEvents = n
		if idleTicks >= 3 {
			// Nothing moved for 300 ms: only timers are left. Jump to the earliest.
			if jumped := advanceToNextTimer(ctx, b.Store, clock); jumped > 0 {
				fmt.Fprintf(out, "%sclock advanced %v to fire the next timers (unpaid orders' payment timeouts, carrier booking retries)\n",
					clearLine(tty), jumped.Round(time.Millisecond))
			}
			idleTicks = 0
		}
		if tty || time.Since(lastPrint) >= time.Second {
			el := time.Since(start).Seconds()
			line := fmt.Sprintf("  %5d/%d orders and deliveries finished   %7d events   %6.0f events/s", finished.Load(), orders+deliveries, n, float64(n)/el)
			if tty {
				fmt.Fprint(out, "\r"+line)
			} else {
				fmt.Fprintln(out, line)
			}
			lastPrint = time.Now()
		}
	}
	elapsed := time.Since(start)
	stop()
	if err := <-stopped; err != nil {
		return err
	}
	if tty {
		fmt.Fprint(out, clearLine(true))
	}
	return demoSummary(ctx, out, b.Store, abs, events.Load(), elapsed)
}

// advanceToNextTimer moves the clock to the earliest armed timer, if it is in the future.
func advanceToNextTimer(ctx context.Context, s *stead.Store, c *demoClock) time.Duration {
	now := c.Now()
	next, err := s.DueTimers(ctx, now.Add(24*time.Hour), 1)
	if err != nil || len(next) == 0 || !next[0].FireAt.After(now) {
		return 0
	}
	d := next[0].FireAt.Sub(now) + time.Millisecond
	c.offset.Add(int64(d))
	return d
}

func demoSummary(ctx context.Context, out io.Writer, s *stead.Store, path string, events int64, elapsed time.Duration) error {
	counts := map[string]int{}
	delivered := map[string]int{}
	children, invoked, attempts := 0, 0, 0
	for _, roots := range []bool{true, false} {
		f := stead.ListFilter{RootsOnly: roots, Limit: stead.MaxListLimit}
		for {
			page, err := s.List(ctx, f)
			if err != nil {
				return err
			}
			for _, e := range page.Items {
				switch {
				case roots && e.DefinitionID == builtinDelivery:
					delivered[string(e.Status)+"/"+dash(e.Outcome)]++
					exe, err := s.Load(ctx, e.ID)
					if err != nil {
						return err
					}
					var c struct{ Attempts int }
					if json.Unmarshal(exe.Context, &c) == nil {
						attempts += c.Attempts
					}
				case roots:
					counts[string(e.Status)+"/"+dash(e.Outcome)]++
				case e.ParentID != "" && e.DefinitionID == builtinCarrier:
					invoked++
				case e.ParentID != "":
					children++
				}
			}
			if page.NextCursor == "" {
				break
			}
			f.Cursor = page.NextCursor
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return counts[b] - counts[a] })
	fmt.Fprintln(out, "\norders by outcome (status/outcome):")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	for _, k := range keys {
		fmt.Fprintf(tw, "  %s\t%d\t\n", k, counts[k])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "region children run: %d\n", children)
	for _, k := range slices.Sorted(maps.Keys(delivered)) {
		fmt.Fprintf(out, "deliveries %s:  %d (each invoked a carrier machine: %d children; booking attempts %d, the first of each retried)\n",
			k, delivered[k], invoked, attempts)
	}
	fmt.Fprintf(out, "events processed:    %d in %.2fs (%.0f events/s)\n", events, elapsed.Seconds(), float64(events)/elapsed.Seconds())
	fmt.Fprintf(out, "database:            %s\n", path)
	fmt.Fprintf(out, "next:                stead inspect --store %s order-00004\n", filepath.Base(path))
	fmt.Fprintf(out, "                     stead diagram --definition %s\n", builtinOrder)
	fmt.Fprintf(out, "                     stead inspect --store %s delivery-00000:booking:0\n", filepath.Base(path))
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func clearLine(tty bool) string {
	if tty {
		return "\r\033[K"
	}
	return ""
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
