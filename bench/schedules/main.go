// Command schedules measures durable schedules on PostgreSQL: N schedules ticking every interval,
// fired by R runners racing on one schema for a while: R goroutines each with its own pool,
// store and transport, or, with -processes, R processes of this program. It reports the ticks due, fired, missed and doubled,
// and the lateness of the starts (the time from a tick to its execution's creation).
//
//	go run ./bench/schedules -postgres "$URL" -n 1000 -runners 3 -seconds 60 [-processes]
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/schedule"
	"github.com/steadhq/stead/schedule/schedworker"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/worker"
)

// recorder is a Starter that records every execution its runner created and how late.
type recorder struct {
	schedule.Starter
	mu      *sync.Mutex
	created map[string]int
	late    *[]time.Duration
}

func (r recorder) Create(ctx context.Context, def, id string, data json.RawMessage) (*stead.Execution, error) {
	exe, err := r.Starter.Create(ctx, def, id, data)
	if exe != nil {
		now := time.Now()
		tick, perr := time.Parse(time.RFC3339Nano, id[strings.LastIndexByte(id, '@')+1:])
		r.mu.Lock()
		r.created[id]++
		if perr == nil {
			*r.late = append(*r.late, now.Sub(tick))
		}
		r.mu.Unlock()
	}
	return exe, err
}

// batchRecorder is recorder for the batched path: an execution whose start StartBatch reports
// existing is counted created when its tick was not seen before (the store's primary key forbids
// a second one; what this counts is ticks, and lateness at their first start).
type batchRecorder struct {
	schedworker.Starter
	mu      *sync.Mutex
	created map[string]int
	late    *[]time.Duration
	ids     *[]string // when set, each id in the order of late
}

func (r batchRecorder) StartBatch(ctx context.Context, starts []schedule.Start) ([]bool, error) {
	exist, err := r.Starter.StartBatch(ctx, starts)
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, ok := range exist {
		id := starts[i].ID
		if !ok || r.created[id] > 0 {
			continue
		}
		r.created[id]++
		if tick, err := time.Parse(time.RFC3339Nano, id[strings.LastIndexByte(id, '@')+1:]); err == nil {
			*r.late = append(*r.late, now.Sub(tick))
			if r.ids != nil {
				*r.ids = append(*r.ids, id)
			}
		}
	}
	return exist, err
}

func main() {
	url := flag.String("postgres", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "PostgreSQL URL")
	n := flag.Int("n", 1000, "schedules")
	runners := flag.Int("runners", 3, "runners racing on the schema")
	seconds := flag.Int("seconds", 60, "how long they run")
	conc := flag.Int("concurrency", 0, "schedules a runner fires at once (0: schedule.DefaultConcurrency)")
	batch := flag.Bool("batch", true, "start a round's ticks in one CreateBatch (schedworker)")
	every := flag.Duration("every", time.Second, "interval of every schedule")
	procs := flag.Bool("processes", false, "run each runner in a process of its own")
	child := flag.String("child", "", "internal: run one runner on this schema and report its starts on stdout")
	flag.Parse()
	ctx := context.Background()
	if *child != "" {
		if err := runChild(ctx, *url, *child, *seconds, *conc); err != nil {
			log.Fatal(err)
		}
		return
	}
	schema := fmt.Sprintf("stead_bench_sched_%d", time.Now().UnixNano())
	admin, err := pgdb.Open(ctx, *url, pgdb.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer admin.Close()
	defer func() {
		if _, err := admin.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			log.Print(err)
		}
	}()

	var mu sync.Mutex
	created := map[string]int{}
	var late []time.Duration
	var rs []*schedule.Runner
	var first *schedule.Store
	quiet := slog.New(slog.DiscardHandler)
	inProcess := *runners
	if *procs {
		inProcess = 1 // the store the schedules are created through; it runs no runner
	}
	for range inProcess {
		pool, err := pgdb.Open(ctx, *url, pgdb.Config{MaxConns: 12})
		if err != nil {
			log.Fatal(err)
		}
		defer pool.Close()
		st, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
		if err != nil {
			log.Fatal(err)
		}
		defer st.Close()
		tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema(schema))
		if err != nil {
			log.Fatal(err)
		}
		defer tr.Close()
		s, err := schedule.For(st)
		if err != nil {
			log.Fatal(err)
		}
		if first == nil {
			first = s
		}
		c := &worker.Client{Store: st, Transport: tr, Logger: quiet}
		r := &schedule.Runner{Schedules: s, Starter: recorder{Starter: c, mu: &mu, created: created, late: &late},
			Executions: st, Logger: quiet, Concurrency: *conc}
		if *batch {
			r = schedworker.Runner(s, c)
			r.Starter = batchRecorder{Starter: schedworker.Starter{Client: c}, mu: &mu, created: created, late: &late}
			r.Concurrency = *conc
		}
		rs = append(rs, r)
	}
	for i := range *n {
		if _, err := first.Create(ctx, schedule.Schedule{ID: fmt.Sprintf("s%05d", i), DefinitionID: "bench",
			Every: *every, Overlap: schedule.AllowAll, CatchUp: schedule.All, CatchUpWindow: time.Minute}); err != nil {
			log.Fatal(err)
		}
	}
	begin := time.Now()
	rctx, cancel := context.WithTimeout(ctx, time.Duration(*seconds)*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	if *procs {
		exe, err := os.Executable()
		if err != nil {
			log.Fatal(err)
		}
		for range *runners {
			wg.Go(func() {
				if err := collect(rctx, exe, *url, schema, *seconds, *conc, &mu, created, &late); err != nil {
					log.Print(err)
				}
			})
		}
	} else {
		for _, r := range rs {
			wg.Go(func() { _ = r.Run(rctx) })
		}
	}
	wg.Wait()
	end := time.Now()

	// Every tick from the start to two intervals before the end must have fired, and none twice.
	due, missed, doubled := 0, 0, 0
	for i := range *n {
		id := fmt.Sprintf("s%05d", i)
		sc, err := first.Get(ctx, id)
		if err != nil {
			log.Fatal(err)
		}
		for t, _ := sc.Next(begin); t.Before(end.Add(-2 * *every)); t, _ = sc.Next(t) {
			due++
			switch created[schedule.ExecutionID(id, t)] {
			case 0:
				missed++
			case 1:
			default:
				doubled++
			}
		}
	}
	slices.Sort(late)
	q := func(p float64) time.Duration {
		if len(late) == 0 {
			return 0
		}
		return late[min(len(late)-1, int(p*float64(len(late))))].Round(time.Millisecond)
	}
	dbl := fmt.Sprint(doubled)
	if *batch {
		dbl = "n/a (a batch reports existing, not created: the primary key forbids a second)"
	}
	where := "goroutines"
	if *procs {
		where = "processes"
	}
	fmt.Printf("%d schedules every %v, %d runners in %s (batch %v), %v: %d ticks due, %d ticks started, %d missed, doubled %s\n",
		*n, *every, *runners, where, *batch, end.Sub(begin).Round(time.Second), due, len(created), missed, dbl)
	fmt.Printf("lateness (tick to execution created): p50 %v, p99 %v, max %v\n", q(0.5), q(0.99), q(1))
}

// runChild runs one batched runner on schema for seconds and prints each execution it saw
// exist for the first time, with its lateness in nanoseconds, one per line.
func runChild(ctx context.Context, url, schema string, seconds, conc int) error {
	pool, err := pgdb.Open(ctx, url, pgdb.Config{MaxConns: 12})
	if err != nil {
		return err
	}
	defer pool.Close()
	st, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
	if err != nil {
		return err
	}
	defer st.Close()
	tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema(schema))
	if err != nil {
		return err
	}
	defer tr.Close()
	s, err := schedule.For(st)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	created := map[string]int{}
	var late []time.Duration
	quiet := slog.New(slog.DiscardHandler)
	c := &worker.Client{Store: st, Transport: tr, Logger: quiet}
	r := schedworker.Runner(s, c)
	r.Starter = batchRecorder{Starter: schedworker.Starter{Client: c}, mu: &mu, created: created, late: &late, ids: &[]string{}}
	r.Concurrency = conc
	rctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second)
	defer cancel()
	_ = r.Run(rctx)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	ids := *r.Starter.(batchRecorder).ids
	for i, id := range ids {
		fmt.Fprintf(w, "%s\t%d\n", id, late[i])
	}
	return nil
}

// collect runs a child runner process and merges what it started: a tick counts once, at the
// lateness the first process to see it exist reported.
func collect(ctx context.Context, exe, url, schema string, seconds, conc int, mu *sync.Mutex, created map[string]int, late *[]time.Duration) error {
	cmd := exec.Command(exe, "-child", schema, "-postgres", url, "-seconds", fmt.Sprint(seconds), "-concurrency", fmt.Sprint(conc))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("runner process: %w", err)
	}
	best := map[string]time.Duration{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		id, ns, ok := strings.Cut(sc.Text(), "\t")
		var d int64
		if _, err := fmt.Sscan(ns, &d); !ok || err != nil {
			return fmt.Errorf("runner process printed %q", sc.Text())
		}
		best[id] = time.Duration(d)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, d := range best {
		if created[id] == 0 {
			*late = append(*late, d)
		}
		created[id]++
	}
	return nil
}
