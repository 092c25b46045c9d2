package schedule_test

import (
	"context"
	"fmt"
	"time"

	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/schedule"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/worker"
)

func Example() {
	ctx := context.Background()
	store := memstore.New()
	schedules, err := schedule.For(store)
	if err != nil {
		panic(err)
	}
	// A clock for the example: a Thursday, a minute before 09:00 in Paris.
	now := time.Date(2026, 1, 1, 7, 59, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	schedules.Clock = clock

	sc, err := schedules.Create(ctx, schedule.Schedule{
		ID: "morning-report", DefinitionID: "report", Context: []byte(`{"format":"pdf"}`),
		Cron: "0 9 * * MON-FRI", TimeZone: "Europe/Paris", Overlap: schedule.Skip,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("next tick:", sc.NextTick)

	client := &worker.Client{Store: store, Transport: memtransport.New()}
	r := &schedule.Runner{Schedules: schedules, Starter: client, Executions: store, Clock: clock}
	now = now.Add(90 * time.Second)
	if _, err := r.RunOnce(ctx); err != nil {
		panic(err)
	}
	exe, err := store.Load(ctx, schedule.ExecutionID("morning-report", sc.NextTick))
	if err != nil {
		panic(err)
	}
	fmt.Println("started:", exe.ID, string(exe.Context))
	sc, _ = schedules.Get(ctx, "morning-report")
	fmt.Println("next tick:", sc.NextTick)
	// Output:
	// next tick: 2026-01-01 08:00:00 +0000 UTC
	// started: morning-report@2026-01-01T08:00:00Z {"format":"pdf"}
	// next tick: 2026-01-02 08:00:00 +0000 UTC
}
