package worker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/worker"
)

// BenchmarkSlowActions is the workload of a new user's approval flow: executions whose one action
// waits 30 ms on an external API, with the default worker settings but 4 claim loops, on SQLite
// (with and without the finisher's one transaction a round) and on PostgreSQL (with and without
// the shared transaction). One op is 100 executions started and past that action, from the
// worker's start; ms/100-executions is the last op's figure.
func BenchmarkSlowActions(b *testing.B) {
	for _, c := range []struct {
		name   string
		spec   func(b *testing.B) (string, string)
		shared bool
	}{
		{"sqlite", func(b *testing.B) (string, string) { return filepath.Join(b.TempDir(), "stead.db"), "" }, false},
		{"sqlite one-tx", func(b *testing.B) (string, string) { return filepath.Join(b.TempDir(), "stead.db"), "" }, true},
		{"postgres", func(b *testing.B) (string, string) { return pgdbtest.URL(), pgdbtest.Schema(b) }, false},
		{"postgres shared-tx", func(b *testing.B) (string, string) { return pgdbtest.URL(), pgdbtest.Schema(b) }, true},
	} {
		b.Run(c.name, func(b *testing.B) { benchSlowActions(b, c.spec, c.shared) })
	}
}

func benchSlowActions(b *testing.B, spec func(b *testing.B) (string, string), shared bool) {
	const executions = 100
	for range b.N {
		b.StopTimer()
		url, schema := spec(b)
		tb, err := openBackend(context.Background(), url, schema)
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
			Concurrency: 4, SharedTx: tb.shared(b, shared), Finisher: tb.finisher(b, shared), OnCommit: func(exe *stead.Execution, _ stead.Event, _ time.Time) {
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
