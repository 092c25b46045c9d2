package worker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/worker"
)

// A worker runs the sample order flow: a Client creates an order, the worker starts it, pays it,
// spawns its two fulfilment regions as child executions, joins them and ships.
func ExampleWorker() {
	ctx := context.Background()
	store, tr := memstore.New(), memtransport.New() // sqlitestore/pgstore and their transports in production
	defer store.Close()
	defer tr.Close()

	def, err := chart.SampleOrderFlow()
	if err != nil {
		panic(err)
	}
	engine, err := chart.NewEngine(def, chart.RegisterSampleActions(chart.NewRegistry()))
	if err != nil {
		panic(err)
	}
	machines := worker.Machines{def.ID: engine}

	client := &worker.Client{Store: store, Transport: tr, Known: machines}
	if _, err := client.Create(ctx, "order", "order-1", []byte(`{"order_id":"o-1","amount":120,"outcome":"ok"}`)); err != nil {
		panic(err)
	}

	w, err := worker.New(worker.Config{Store: store, Transport: tr, Machines: machines, Concurrency: 2})
	if err != nil {
		panic(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(runCtx) }()

	for {
		exe, err := store.Load(ctx, "order-1")
		if err == nil && exe.Status.Finished() {
			fmt.Println(exe.Status, exe.Outcome, len(exe.Children), "regions")
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop() // graceful: stops claiming, finishes the steps in flight
	if err := <-done; err != nil {
		panic(err)
	}
	// Output: done success 2 regions
}

// An operator suspends an order that waits for its payment, resumes it, then cancels it: the
// commands apply at once, and the cancel ends the order once its queue is drained.
func ExampleClient_Control() {
	ctx := context.Background()
	store, tr := memstore.New(), memtransport.New()
	defer store.Close()
	defer tr.Close()
	def, err := chart.SampleOrderFlow()
	if err != nil {
		panic(err)
	}
	engine, err := chart.NewEngine(def, chart.RegisterSampleActions(chart.NewRegistry()))
	if err != nil {
		panic(err)
	}
	machines := worker.Machines{def.ID: engine}
	w, err := worker.New(worker.Config{Store: store, Transport: tr, Machines: machines, SuspendRecheck: 10 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(runCtx) }()
	defer func() { stop(); <-done }()

	client := &worker.Client{Store: store, Transport: tr, Known: machines}
	// "timeout": nobody pays, so the order waits in awaiting_payment.
	if _, err := client.Create(ctx, "order", "order-7", []byte(`{"order_id":"o-7","amount":30,"outcome":"timeout"}`)); err != nil {
		panic(err)
	}
	waitFor := func(ok func(*stead.Execution) bool) *stead.Execution {
		for {
			if exe, err := store.Load(ctx, "order-7"); err == nil && ok(exe) {
				return exe
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor(func(e *stead.Execution) bool { return e.Status == stead.StatusRunning })
	for _, op := range []worker.Op{worker.OpSuspend, worker.OpResume, worker.OpCancel} {
		out, err := client.Control(ctx, "order-7", worker.Command{Op: op})
		if err != nil {
			panic(err)
		}
		fmt.Println(op, "->", out.Status)
	}
	exe := waitFor(func(e *stead.Execution) bool { return e.Status.Finished() })
	fmt.Println(exe.Status, "in", exe.ActivePath)
	_, err = client.Resume(ctx, "order-7", "")
	fmt.Println(err)
	// Output:
	// suspend -> suspended
	// resume -> running
	// cancel -> cancelling
	// cancelled in awaiting_payment
	// stead: resume "order-7": execution is cancelled: it has ended
}
