package schedule_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/schedule"
	"github.com/steadhq/stead/schedule/schedworker"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/worker"
)

// counting is a Starter that records every execution it created, to catch a tick started twice.
type counting struct {
	schedule.Starter
	mu      *sync.Mutex
	created map[string]int
}

func (c counting) Create(ctx context.Context, def, id string, data json.RawMessage) (*stead.Execution, error) {
	exe, err := c.Starter.Create(ctx, def, id, data)
	if exe != nil {
		c.mu.Lock()
		c.created[id]++
		c.mu.Unlock()
	}
	return exe, err
}

// TestRunnersRaceOnPostgres races three runners, each with its own store and pool as three
// processes would have, on one schema for a few seconds of sub-second and one-second ticks: every
// tick from the first to the last fires, and none twice.
func TestRunnersRaceOnPostgres(t *testing.T) {
	t.Run("one_by_one", func(t *testing.T) { raceOnPostgres(t, false) })
	// Batched through schedworker: a round's ticks in one CreateBatch. Created counts are not
	// seen one by one there; the store's primary key and the loads below stand for them.
	t.Run("batched", func(t *testing.T) { raceOnPostgres(t, true) })
}

func raceOnPostgres(t *testing.T, batched bool) {
	if testing.Short() {
		t.Skip("runs for seconds")
	}
	pgdbtest.Pool(t) // skips without a server
	admin := pgdbtest.Pool(t)
	name := pgdbtest.NewName(t)
	t.Cleanup(func() { pgdbtest.Drop(t, admin, name) })
	ctx := context.Background()

	var mu sync.Mutex
	created := make(map[string]int)
	var runners []*schedule.Runner
	var first *schedule.Store
	var firstStore *stead.Store
	for range 3 {
		pool := pgdbtest.Pool(t)
		st, err := pgstore.New(ctx, pool, pgstore.WithSchema(name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		schedules, err := schedule.For(st)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first, firstStore = schedules, st
		}
		client := &worker.Client{Store: st, Transport: memtransport.New()}
		r := &schedule.Runner{Schedules: schedules, Executions: st,
			Starter: counting{Starter: client, mu: &mu, created: created}, Poll: 20 * time.Millisecond}
		if batched {
			r = schedworker.Runner(schedules, client)
			r.Poll = 20 * time.Millisecond
		}
		runners = append(runners, r)
	}
	specs := []schedule.Schedule{
		{ID: "fast", DefinitionID: "d", Every: 200 * time.Millisecond, Overlap: schedule.AllowAll, CatchUp: schedule.All},
		{ID: "second", DefinitionID: "d", Cron: "* * * * * *", Overlap: schedule.AllowAll, CatchUp: schedule.All},
	}
	for _, sc := range specs {
		if _, err := first.Create(ctx, sc); err != nil {
			t.Fatal(err)
		}
	}
	begin := map[string]time.Time{}
	for _, sc := range specs {
		got, _ := first.Get(ctx, sc.ID)
		begin[sc.ID] = got.NextTick
	}

	rctx, cancel := context.WithTimeout(ctx, 3500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Go(func() {
			if err := r.Run(rctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Run: %v", err)
			}
		})
	}
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	for id, n := range created {
		if n != 1 {
			t.Errorf("%s created %d times", id, n)
		}
	}
	total := 0
	for _, sc := range specs {
		got, err := first.Get(ctx, sc.ID)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for tick := begin[sc.ID]; !tick.After(got.LastTick); tick, _ = got.Next(tick) {
			id := schedule.ExecutionID(sc.ID, tick)
			if created[id] != 1 && !batched {
				t.Errorf("tick %s: created %d times", id, created[id])
			}
			if _, err := firstStore.Load(ctx, id); err != nil {
				t.Errorf("tick %s: %v", id, err)
			}
			n++
		}
		if min := map[string]int{"fast": 5, "second": 1}[sc.ID]; n < min {
			t.Errorf("%s fired %d ticks in 3.5s, want at least %d (a loaded machine is slow, never this slow)", sc.ID, n, min)
		}
		total += n
	}
	if total != len(created) && !batched {
		t.Errorf("%d executions created, %d ticks fired", len(created), total)
	}
	t.Logf("%d ticks, each fired once by 3 racing runners", total)
}
