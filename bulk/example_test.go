package bulk_test

import (
	"context"
	"fmt"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/bulk"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/worker"
)

// Cancel every running execution of a definition as a job: count first, then start it, and
// follow its progress while a worker runs it.
func ExampleStart() {
	ctx := context.Background()
	store, tr := memstore.New(), memtransport.New()
	defer store.Close()
	defer tr.Close()
	flow := chart.New("item").Initial("waiting")
	flow.State("waiting").On("finish", "finished")
	flow.State("finished").Final(chart.OutcomeSuccess)
	def, _ := flow.Definition()
	engine, _ := chart.NewEngine(def, chart.NewRegistry())
	machines := worker.Machines{"item": engine}
	bulk.Register(machines, store, tr, bulk.Options{})
	client := &worker.Client{Store: store, Transport: tr, Known: machines}

	w, _ := worker.New(worker.Config{Store: store, Transport: tr, Machines: machines, IdleWait: 10 * time.Millisecond})
	run, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(run) }()
	defer func() { stop(); <-done }()

	for i := range 5 {
		_, _ = client.Create(ctx, "item", fmt.Sprintf("item-%d", i), nil)
	}
	for {
		c, _ := store.Count(ctx, stead.ListFilter{DefinitionID: "item", Statuses: []stead.Status{stead.StatusRunning}})
		if c.Total == 5 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}

	spec := bulk.Spec{ID: "cancel-items", Op: bulk.OpCancel, Rate: 100,
		Filter: stead.ListFilter{DefinitionID: "item", Statuses: []stead.Status{stead.StatusRunning}, RootsOnly: true}}
	est, err := bulk.DryRun(ctx, store, spec)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("dry run: %d match, %d take a cancel\n", est.Matched, est.Eligible)

	job, err := bulk.Start(ctx, client, spec)
	if err != nil {
		fmt.Println(err)
		return
	}
	for !job.Status.Finished() {
		time.Sleep(10 * time.Millisecond)
		if job, err = bulk.Get(ctx, store, job.ID); err != nil {
			fmt.Println(err)
			return
		}
	}
	p := job.Progress
	fmt.Printf("%s: %s, %d done, %d refused, %d remaining\n", job.ID, job.Status, p.Done, p.Refused, p.Remaining)
	// Output:
	// dry run: 5 match, 5 take a cancel
	// cancel-items: done, 5 done, 0 refused, 0 remaining
}
