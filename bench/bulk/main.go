// Command bulk measures a bulk job at scale: it stores N running executions (half of them with
// the attribute customer=42), dry-runs and starts a job that cancels customer 42's, and reports
// how long the job took to apply every page, how long until every target was cancelled, and the
// job's progress as it went.
//
//	go run ./bench/bulk                                # SQLite, a temporary file, 100,000 executions
//	go run ./bench/bulk -postgres "$URL" -n 100000     # PostgreSQL, a scratch schema dropped after
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/bulk"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/transport/sqlitetransport"
	"github.com/steadhq/stead/worker"
)

// idle is the targets' machine: they sit running; an operator's cancel ends them (the worker
// ends a cancel whether the machine knows it or not).
type idle struct{}

func (idle) Step(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	next := exe.Clone()
	next.UpdatedAt = now
	return next, stead.Bundle{ProcessedEventID: ev.ID}, nil
}

func main() {
	n := flag.Int("n", 100000, "executions to store (half of them customer 42's)")
	postgres := flag.String("postgres", "", "PostgreSQL URL (default: SQLite in a temporary file)")
	flag.Parse()
	if err := run(context.Background(), *n, *postgres); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, n int, postgres string) error {
	store, tr, closeAll, err := open(ctx, postgres)
	if err != nil {
		return err
	}
	defer closeAll()

	start := time.Now()
	now := start.UTC()
	for i := 0; i < n; i += stead.MaxBatch {
		var items []stead.CommitItem
		for j := i; j < min(n, i+stead.MaxBatch); j++ {
			items = append(items, stead.CommitItem{Execution: &stead.Execution{
				ID: fmt.Sprintf("order-%07d", j), DefinitionID: "order", Status: stead.StatusRunning,
				ActivePath: "waiting", CreatedAt: now, UpdatedAt: now,
				Attributes: map[string]stead.AttrValue{"customer": stead.AttrInt(int64(40 + j%2*2))},
			}})
		}
		res, err := store.CommitBatch(ctx, items)
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.Err != nil {
				return r.Err
			}
		}
	}
	fmt.Printf("stored %d running executions in %v\n", n, time.Since(start).Round(time.Millisecond))

	machines := worker.Machines{"order": idle{}}
	bulk.Register(machines, store, tr, bulk.Options{})
	client := &worker.Client{Store: store, Transport: tr, Known: machines}
	spec := bulk.Spec{Op: bulk.OpCancel, Filter: stead.ListFilter{DefinitionID: "order", RootsOnly: true,
		Statuses: []stead.Status{stead.StatusRunning}, Attributes: []stead.AttrFilter{stead.Where("customer", stead.AttrEq, stead.AttrInt(42))}}}
	t := time.Now()
	est, err := bulk.DryRun(ctx, store, spec)
	if err != nil {
		return err
	}
	fmt.Printf("dry run: %d match, %d eligible (%v)\n", est.Matched, est.Eligible, time.Since(t).Round(time.Millisecond))

	w, err := worker.New(worker.Config{Store: store, Transport: tr, Machines: machines, IdleWait: 50 * time.Millisecond})
	if err != nil {
		return err
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()

	t = time.Now()
	job, err := bulk.Start(ctx, client, spec)
	if err != nil {
		return err
	}
	next := time.Second
	for job.Status != stead.StatusDone {
		time.Sleep(100 * time.Millisecond)
		if job, err = bulk.Get(ctx, store, job.ID); err != nil {
			return err
		}
		if el := time.Since(t); el >= next {
			p := job.Progress
			fmt.Printf("  %5.1fs  done %d, refused %d, remaining %d, pages %d\n", el.Seconds(), p.Done, p.Refused, p.Remaining, p.Pages)
			next += time.Second
		}
	}
	applied := time.Since(t)
	p := job.Progress
	fmt.Printf("job %s: done %d, refused %d, repeats %d, pages %d in %v (%.0f targets/s)\n",
		job.Outcome, p.Done, p.Refused, p.Repeats, p.Pages, applied.Round(time.Millisecond), float64(p.Done)/applied.Seconds())
	cancelled := stead.ListFilter{DefinitionID: "order", Statuses: []stead.Status{stead.StatusCancelled}}
	for {
		c, err := store.Count(ctx, cancelled)
		if err != nil {
			return err
		}
		if c.Total >= p.Done {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("every target cancelled %v after the start\n", time.Since(t).Round(time.Millisecond))
	return nil
}

// open opens a store and a transport on a fresh SQLite file or a scratch PostgreSQL schema.
func open(ctx context.Context, postgres string) (*stead.Store, *transport.Transport, func(), error) {
	if postgres == "" {
		dir, err := os.MkdirTemp("", "bench-bulk")
		if err != nil {
			return nil, nil, nil, err
		}
		db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: filepath.Join(dir, "bulk.db")})
		if err != nil {
			return nil, nil, nil, err
		}
		store, err := sqlitestore.New(ctx, db)
		if err != nil {
			return nil, nil, nil, err
		}
		tr, err := sqlitetransport.New(ctx, db)
		if err != nil {
			return nil, nil, nil, err
		}
		return store, tr, func() { tr.Close(); store.Close(); db.Close(); os.RemoveAll(dir) }, nil
	}
	pool, err := pgdb.Open(ctx, postgres, pgdb.Config{MaxConns: 16})
	if err != nil {
		return nil, nil, nil, err
	}
	schema := fmt.Sprintf("bench_bulk_%d", time.Now().UnixNano())
	store, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
	if err != nil {
		return nil, nil, nil, err
	}
	tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema(schema))
	if err != nil {
		return nil, nil, nil, err
	}
	return store, tr, func() {
		tr.Close()
		store.Close()
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		pool.Close()
	}, nil
}
