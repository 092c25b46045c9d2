package worker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/worker"
)

// BenchmarkSlowActions is the workload of a new user's approval flow: executions whose one action
// waits 30 ms on an external API, on SQLite with the default worker settings but 4 claim loops.
// One op is 100 executions past that action, from the first claim; the figure to read is
// ms/100-executions.
func BenchmarkSlowActions(b *testing.B) {
	const executions = 100
	for range b.N {
		b.StopTimer()
		tb, err := openBackend(context.Background(), filepath.Join(b.TempDir(), "stead.db"), "")
		if err != nil {
			b.Fatal(err)
		}
		def := chart.New("approval")
		def.Initial("waiting")
		def.State("waiting").On("check", "checked").Do("call")
		def.State("checked").Final(chart.OutcomeSuccess)
		d, err := def.Definition()
		if err != nil {
			b.Fatal(err)
		}
		eng, err := chart.NewEngine(d, chart.NewRegistry().Action("call", func(c chart.ActionContext) (chart.ActionResult, error) {
			select {
			case <-time.After(30 * time.Millisecond):
				return chart.ActionResult{}, nil
			case <-c.Context().Done():
				return chart.ActionResult{}, c.Context().Err()
			}
		}))
		if err != nil {
			b.Fatal(err)
		}
		machines := worker.Machines{"approval": eng}
		ctx := context.Background()
		client := &worker.Client{Store: tb.Store, Transport: tb.Transport, Known: machines}
		var news []worker.NewExecution
		var ids []string
		for i := range executions {
			id := fmt.Sprintf("a%03d", i)
			ids = append(ids, id)
			news = append(news, worker.NewExecution{DefinitionID: "approval", ID: id})
		}
		if _, err := client.CreateBatch(ctx, news); err != nil {
			b.Fatal(err)
		}
		for _, id := range ids {
			if _, err := client.Send(ctx, id, stead.Event{ID: id + "-check", Kind: "check"}); err != nil {
				b.Fatal(err)
			}
		}
		finished := make(chan struct{}, executions)
		w, err := worker.New(worker.Config{Store: tb.Store, Transport: tb.Transport, Machines: machines,
			Concurrency: 4, OnCommit: func(exe *stead.Execution, _ stead.Event, _ time.Time) {
				if exe.Status == stead.StatusDone {
					finished <- struct{}{}
				}
			}})
		if err != nil {
			b.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		b.StartTimer()
		start := time.Now()
		go func() { done <- w.Run(runCtx) }()
		for range executions {
			<-finished
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/100-executions")
		b.StopTimer()
		stop()
		<-done
		_ = tb.Close()
	}
}
