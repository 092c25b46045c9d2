package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/cli"
	"github.com/steadhq/stead/cli/backend"
	"github.com/steadhq/stead/retention"
	"github.com/steadhq/stead/worker"
)

func newDemoOperate() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "demo-operate",
		Short: "Watch an operator suspend, resume and cancel orders while workers run them",
		Long: `demo-operate needs no server and no flags. It creates stead-operate.db in the current directory
(replacing an earlier one), starts a worker on it, and takes 30 orders of the bundled order flow
through an operator's day: it suspends ten of them before their payments arrive (the payments
wait, parked), lets the other twenty ship, resumes five (their parked payments apply and they
ship), cancels the last five (their parked payments are drained unapplied), and ends with a dry
run of the retention sweep. Each step prints what the commands did; stead inspect shows an order's
trace afterwards.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemoOperate(cmd.Context(), cmd.OutOrStdout(), path)
		},
	}
	cmd.Flags().StringVar(&path, "db", "stead-operate.db", "SQLite file to create (replaced if it exists)")
	return cmd
}

func runDemoOperate(ctx context.Context, out io.Writer, path string) error {
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
	machines, err := sampleMachines([]string{builtinOrder}, chart.WithTrace())
	if err != nil {
		return err
	}
	// The clock stands still: the orders' 5-second payment timers never fire on their own, so
	// every order waits for the payment the demo sends.
	frozen := time.Now()
	clock := func() time.Time { return frozen }
	w, err := worker.New(worker.Config{
		Store: b.Store, Transport: b.Transport, Machines: machines, Name: "demo-operate",
		Concurrency: 4, Clock: clock, IdleWait: 20 * time.Millisecond, SuspendRecheck: 100 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(runCtx) }()
	defer func() { stop(); <-stopped }()

	client := &worker.Client{Store: b.Store, Transport: b.Transport, Known: machines, Clock: clock}
	fmt.Fprintf(out, "stead demo-operate: 30 orders of the bundled order flow, one worker, SQLite file %s\n\n", path)
	const orders = 30
	var news []worker.NewExecution
	for i := range orders {
		id := fmt.Sprintf("order-%02d", i)
		// "timeout": the flow asks for the payment and waits for it.
		news = append(news, worker.NewExecution{DefinitionID: "order", ID: id,
			Context: fmt.Appendf(nil, `{"order_id":%q,"amount":%d,"outcome":"timeout"}`, id, 20+i)})
	}
	if _, err := client.CreateBatch(ctx, news); err != nil {
		return err
	}
	if err := awaitCount(ctx, b.Store, "awaiting_payment", stead.StatusRunning, orders); err != nil {
		return err
	}
	fmt.Fprintln(out, "1. 30 orders wait for their payments (awaiting_payment).")

	rep, err := client.ControlMatching(ctx, stead.ListFilter{IDPrefix: "order-0", RootsOnly: true},
		worker.Command{Op: worker.OpSuspend, ID: "suspend-batch"}, worker.BatchOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "2. stead suspend --id-prefix order-0: %d suspended (order-00 to order-09).\n", rep.Applied)

	for i := range orders {
		id := fmt.Sprintf("order-%02d", i)
		ev := stead.Event{ID: "pay-" + id, Kind: "payment_received", Data: []byte(fmt.Sprintf(`{"amount":%d}`, 20+i))}
		if _, err := client.Send(ctx, id, ev); err != nil {
			return err
		}
	}
	if err := awaitCount(ctx, b.Store, "shipped", stead.StatusDone, orders-10); err != nil {
		return err
	}
	time.Sleep(300 * time.Millisecond) // a few recheck periods: the suspended ones do not move
	parked, err := countAt(ctx, b.Store, "awaiting_payment", stead.StatusSuspended)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "3. every order was paid: 20 shipped; the %d suspended ones still await payment, theirs parked.\n", parked)

	var resumed, cancelled int
	for i := range 10 {
		id := fmt.Sprintf("order-%02d", i)
		op := worker.OpResume
		if i >= 5 {
			op = worker.OpCancel
		}
		if _, err := client.Control(ctx, id, worker.Command{Op: op, ID: string(op) + "-" + id}); err != nil {
			return err
		}
		if op == worker.OpResume {
			resumed++
		} else {
			cancelled++
		}
	}
	fmt.Fprintf(out, "4. stead resume order-00 ... order-04: %d resumed; stead cancel order-05 ... order-09: %d cancelling.\n", resumed, cancelled)
	if err := awaitCount(ctx, b.Store, "shipped", stead.StatusDone, orders-5); err != nil {
		return err
	}
	if err := awaitCount(ctx, b.Store, "awaiting_payment", stead.StatusCancelled, 5); err != nil {
		return err
	}
	fmt.Fprintln(out, "5. the resumed orders took their parked payments and shipped; the cancelled ones dropped")
	fmt.Fprintln(out, "   theirs unapplied and ended cancelled where they were, awaiting payment.")

	_, err = client.Resume(ctx, "order-09", "")
	fmt.Fprintf(out, "6. stead resume order-09 now: refused (%s).\n", cli.Message(err))

	sweep, err := retention.PurgeFinished(ctx, b.Store, retention.Sweep{Before: frozen.Add(time.Hour), DryRun: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "7. stead purge --finished-before ... --dry-run: would purge %d trees (%d executions with their regions).\n",
		sweep.Purged, sweep.Deleted)
	fmt.Fprintf(out, "\nnext: stead inspect --store %s order-07     # its trace: suspend, cancel request, cancel\n", filepath.Base(path))
	return nil
}

// awaitCount waits until n root orders rest in path with status st.
func awaitCount(ctx context.Context, s *stead.Store, path string, st stead.Status, n int) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err := countAt(ctx, s, path, st)
		if err != nil {
			return err
		}
		if got >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("demo-operate: %d of %d orders %s in %s after a minute", got, n, st, path)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func countAt(ctx context.Context, s *stead.Store, path string, st stead.Status) (int, error) {
	f := stead.ListFilter{RootsOnly: true, Statuses: []stead.Status{st}, Limit: stead.MaxListLimit}
	n := 0
	for {
		page, err := s.List(ctx, f)
		if err != nil {
			return 0, err
		}
		for _, it := range page.Items {
			if it.ActivePath == path {
				n++
			}
		}
		if page.NextCursor == "" {
			return n, nil
		}
		f.Cursor = page.NextCursor
	}
}
