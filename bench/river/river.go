package main

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// noopArgs is the burn-down's job: it does nothing, so the figure is River's own cost.
type noopArgs struct {
	N int `json:"n"`
}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// riverRound inserts jobs jobs, then starts a River client with maxWorkers workers on the default
// queue (every other setting at River's default) and measures from its start until the last job
// is reported completed (River reports a completion once its completer has written it).
func riverRound(ctx context.Context, h *harness, jobs, maxWorkers int) (measure, error) {
	rt := &roundTrips{}
	// The pool is the application's, not River's: the same size as stead's drain gets.
	pool, err := openPool(ctx, h.url, steadPoolSize(0), rt)
	if err != nil {
		return measure{}, err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	mig, err := rivermigrate.New(driver, nil)
	if err != nil {
		return measure{}, err
	}
	if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return measure{}, fmt.Errorf("river migrate: %w", err)
	}
	if _, err := pool.Exec(ctx, "TRUNCATE river_job"); err != nil {
		return measure{}, err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, noopWorker{})
	client, err := river.NewClient(driver, &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		Workers: workers,
	})
	if err != nil {
		return measure{}, err
	}
	const chunk = 1000
	for i := 0; i < jobs; i += chunk {
		params := make([]river.InsertManyParams, 0, chunk)
		for j := i; j < min(i+chunk, jobs); j++ {
			params = append(params, river.InsertManyParams{Args: noopArgs{N: j}})
		}
		if _, err := client.InsertManyFast(ctx, params); err != nil {
			return measure{}, fmt.Errorf("river insert: %w", err)
		}
	}
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: jobs + 1, Kinds: []river.EventKind{river.EventKindJobCompleted}})
	defer cancel()
	if _, err := pool.Exec(ctx, "CHECKPOINT"); err != nil {
		return measure{}, err
	}
	m, err := h.begin(ctx, rt)
	if err != nil {
		return measure{}, err
	}
	if err := client.Start(ctx); err != nil {
		return measure{}, err
	}
	timeout := time.NewTimer(h.limit)
	defer timeout.Stop()
	done := 0
wait:
	for done < jobs {
		select {
		case <-events:
			done++
		case <-timeout.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	res, err := h.end(ctx, m, done, rt)
	stopCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer stop()
	if serr := client.Stop(stopCtx); err == nil && serr != nil {
		err = serr
	}
	res.partial = done < jobs
	return res, err
}
