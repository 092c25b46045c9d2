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

// Start an approval, approve it, and wait for it to finish. On PostgreSQL (pgstore) Wait is woken
// by a notification when the execution finishes; on other stores it polls.
func ExampleClient_Wait() {
	ctx := context.Background()
	store, tr := memstore.New(), memtransport.New()
	defer store.Close()
	defer tr.Close()
	def, err := chart.Parse("approval.yaml", []byte(`
id: approval
initial: pending
states:
  pending: {on: {approve: approved, reject: rejected}}
  approved: {final: success}
  rejected: {final: rejected}
`))
	if err != nil {
		panic(err)
	}
	eng, err := chart.NewEngine(def, nil)
	if err != nil {
		panic(err)
	}
	machines := worker.Machines{eng.DefinitionID(): eng}
	w, err := worker.New(worker.Config{Store: store, Transport: tr, Machines: machines})
	if err != nil {
		panic(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(runCtx) }()

	client := &worker.Client{Store: store, Transport: tr, Known: machines}
	if _, err := client.Create(ctx, "approval", "a-1", nil); err != nil {
		panic(err)
	}
	if _, err := client.Send(ctx, "a-1", stead.Event{ID: "a-1-approve", Kind: "approve"}); err != nil {
		panic(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second) // Wait honours ctx
	defer cancel()
	exe, err := client.Wait(waitCtx, "a-1")
	if err != nil {
		panic(err)
	}
	fmt.Println(exe.Status, exe.Outcome)

	stop()
	if err := <-done; err != nil {
		panic(err)
	}
	// Output: done success
}
