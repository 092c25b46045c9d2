// Command flow measures flow control (chart.Limit, enforced in the transport's claim) on SQLite
// and on a throwaway PostgreSQL cluster of stock settings that it starts, and writes what it
// measured as Markdown:
//
//  1. Not binding: the drain of a backlog of N executions × E events with no limit declared,
//     with a per-customer limit that never binds (K customers, a concurrency above what a
//     customer ever has), and with a definition-wide limit that never binds; alternating rounds,
//     medians, each limited variant's ratio to none.
//
//  2. Binding: a limit of L per customer over K customers whose action takes D: the most steps
//     of one customer ever in flight (counted by the action as it runs, and by a sampler), and
//     the rate as K grows, against the ceiling K·L/D.
//
// Run it from the repository's root:
//
//	go run ./bench/flow -out bench/results/flow.md
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/internal/chaos"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/transport/sqlitetransport"
	"github.com/steadhq/stead/worker"
	"github.com/steadhq/stead/worker/pgtx"
)

type options struct {
	executions, events, customers, rounds int
	bindKeys                              []int
	limit, perKey, bindEvents             int
	action                                time.Duration
	postgres                              string
	backends                              []string
}

func main() {
	var o options
	var bind, backends string
	flag.IntVar(&o.executions, "executions", 2000, "not binding: executions in the backlog")
	flag.IntVar(&o.events, "events", 5, "not binding: work events per execution (each also gets a start and a finish)")
	flag.IntVar(&o.customers, "customers", 100, "not binding: customers the executions are spread over")
	flag.IntVar(&o.rounds, "rounds", 3, "not binding: alternating rounds")
	flag.StringVar(&bind, "bind-keys", "1,4,16", "binding: the numbers of customers to run")
	flag.IntVar(&o.limit, "limit", 2, "binding: the concurrency per customer")
	flag.IntVar(&o.perKey, "per-key", 20, "binding: executions per customer")
	flag.IntVar(&o.bindEvents, "bind-events", 3, "binding: work events per execution")
	flag.DurationVar(&o.action, "action", 10*time.Millisecond, "binding: how long the action takes")
	flag.StringVar(&o.postgres, "postgres", "", "PostgreSQL URL to use instead of a throwaway cluster")
	flag.StringVar(&backends, "backends", "sqlite,postgres,postgres-shared-tx", "backends to run")
	out := flag.String("out", "", "write the Markdown report here (default: stdout only)")
	flag.Parse()
	for _, k := range strings.Split(bind, ",") {
		var n int
		if _, err := fmt.Sscan(k, &n); err != nil || n < 1 {
			log.Fatalf("bad -bind-keys %q", bind)
		}
		o.bindKeys = append(o.bindKeys, n)
	}
	o.backends = strings.Split(backends, ",")
	if err := run(context.Background(), o, *out); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, o options, out string) error {
	dir, err := os.MkdirTemp("", "stead-flow-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	url := o.postgres
	if url == "" && slices.ContainsFunc(o.backends, func(b string) bool { return strings.HasPrefix(b, "postgres") }) {
		c, err := chaos.StartStockCluster(ctx, filepath.Join(dir, "pg"))
		if err != nil {
			return err
		}
		defer c.Stop()
		url = c.URL()
	}
	h := &harness{o: o, url: url, dir: dir}
	var rep strings.Builder
	w := io.MultiWriter(os.Stdout, &rep)
	fmt.Fprintf(w, "# Flow control: limits declared, binding and not\n\n")
	fmt.Fprintf(w, "Command: `go run ./bench/flow %s`, %s, load at start %s.\n\n", strings.Join(os.Args[1:], " "),
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), loadavg())
	fmt.Fprintf(w, "Worker: default settings (8 claim loops of 128); PostgreSQL: a throwaway cluster of stock "+
		"settings (fsync on, autovacuum on) unless -postgres; `postgres-shared-tx` is `stead run`'s default on PostgreSQL.\n\n")

	fmt.Fprintf(w, "## Not binding\n\nShape: %d executions × (1 start + %d work + 1 finish) events, a backlog drained by one "+
		"worker; the action does nothing. `per-customer`: `limit: {key: context.customer, concurrency: 1000000}` over %d "+
		"customers; `definition`: `limit: {concurrency: 1000000}`. Events/s, %d alternating rounds, median (min–max).\n\n",
		o.executions, o.events, o.customers, o.rounds)
	fmt.Fprintf(w, "| backend | none | per-customer | ratio | definition | ratio |\n|---|---|---|---|---|---|\n")
	for _, be := range o.backends {
		rates := map[string][]float64{}
		for range o.rounds {
			for _, v := range []string{"none", "per-customer", "definition"} {
				r, err := h.drain(ctx, be, v)
				if err != nil {
					return fmt.Errorf("%s %s: %w", be, v, err)
				}
				rates[v] = append(rates[v], r)
				log.Printf("%s %s: %.0f events/s", be, v, r)
			}
		}
		none := median(rates["none"])
		fmt.Fprintf(w, "| %s | %s | %s | %.2f× | %s | %.2f× |\n", be, spread(rates["none"]),
			spread(rates["per-customer"]), median(rates["per-customer"])/none,
			spread(rates["definition"]), median(rates["definition"])/none)
	}

	fmt.Fprintf(w, "\n## Binding\n\nShape: a limit of %d per customer (`limit: {key: context.customer, concurrency: %d}`), "+
		"%d executions per customer × (1 start + %d work + 1 finish) events; the work action takes %v. `most in flight` is the "+
		"largest number of one customer's actions running at once, counted by the action itself and by a sampler every "+
		"millisecond; `ceiling` is customers × limit / action.\n\n", o.limit, o.limit, o.perKey, o.bindEvents, o.action)
	fmt.Fprintf(w, "| backend | customers | most in flight (counted / sampled) | work steps/s | ceiling | share |\n|---|---|---|---|---|---|\n")
	for _, be := range o.backends {
		for _, k := range o.bindKeys {
			b, err := h.bind(ctx, be, k)
			if err != nil {
				return fmt.Errorf("%s binding %d: %w", be, k, err)
			}
			ceiling := float64(k*o.limit) / o.action.Seconds()
			fmt.Fprintf(w, "| %s | %d | %d / %d | %.0f | %.0f | %.2f |\n", be, k, b.counted, b.sampled, b.rate, ceiling, b.rate/ceiling)
			if b.counted > o.limit || b.sampled > o.limit {
				return fmt.Errorf("%s: a customer had %d steps in flight, limit %d", be, max(b.counted, b.sampled), o.limit)
			}
		}
	}
	if out != "" {
		return os.WriteFile(out, []byte(rep.String()), 0o644)
	}
	return nil
}

type harness struct {
	o    options
	url  string
	dir  string
	runs int
}

// backend is one fresh store and transport, and its worker's shared transaction if any.
type backend struct {
	store  *stead.Store
	tr     *transport.Transport
	shared worker.SharedDB
	close  func()
}

func (h *harness) open(ctx context.Context, name string) (*backend, error) {
	h.runs++
	if name == "sqlite" {
		db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: filepath.Join(h.dir, fmt.Sprintf("run%d.db", h.runs))})
		if err != nil {
			return nil, err
		}
		st, err := sqlitestore.New(ctx, db)
		if err != nil {
			return nil, err
		}
		tr, err := sqlitetransport.New(ctx, db)
		if err != nil {
			return nil, err
		}
		return &backend{store: st, tr: tr, close: func() { _ = tr.Close(); _ = st.Close(); _ = db.Close() }}, nil
	}
	schema := fmt.Sprintf("flow_%d_%d", os.Getpid(), h.runs)
	pool, err := pgdb.Open(ctx, h.url, pgdb.Config{MaxConns: 24})
	if err != nil {
		return nil, err
	}
	drop := func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		pool.Close()
	}
	st, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
	if err != nil {
		drop()
		return nil, err
	}
	tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema(schema))
	if err != nil {
		drop()
		return nil, err
	}
	b := &backend{store: st, tr: tr, close: func() { _ = tr.Close(); _ = st.Close(); drop() }}
	if name == "postgres-shared-tx" {
		if b.shared, err = pgtx.New(st, tr); err != nil {
			b.close()
			return nil, err
		}
	}
	return b, nil
}

// counter counts the actions of each customer running at once.
type counter struct {
	mu            sync.Mutex
	now, counted  map[string]int
	sampled       map[string]int
	work          int
	first, last   time.Time
	action        time.Duration
	stopSampling  chan struct{}
	samplingEnded chan struct{}
}

func newCounter(action time.Duration) *counter {
	return &counter{now: map[string]int{}, counted: map[string]int{}, sampled: map[string]int{}, action: action}
}

func (c *counter) call(a chart.ActionContext) (chart.ActionResult, error) {
	customer := a.String("customer")
	c.mu.Lock()
	c.now[customer]++
	c.counted[customer] = max(c.counted[customer], c.now[customer])
	if c.first.IsZero() {
		c.first = time.Now()
	}
	c.mu.Unlock()
	if c.action > 0 {
		select {
		case <-time.After(c.action):
		case <-a.Context().Done():
		}
	}
	c.mu.Lock()
	c.now[customer]--
	c.work++
	c.last = time.Now()
	c.mu.Unlock()
	return chart.ActionResult{}, nil
}

func (c *counter) sample() {
	c.stopSampling, c.samplingEnded = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(c.samplingEnded)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-c.stopSampling:
				return
			case <-t.C:
				c.mu.Lock()
				for k, n := range c.now {
					c.sampled[k] = max(c.sampled[k], n)
				}
				c.mu.Unlock()
			}
		}
	}()
}

func (c *counter) stop() {
	if c.stopSampling != nil {
		close(c.stopSampling)
		<-c.samplingEnded
	}
}

const defYAML = `
id: metered
context: {customer: string}
%s
initial: open
states:
  open:
    on:
      work: {actions: [call]}
      finish: closed
  closed: {final: success}
`

func engine(limit string, c *counter) (*chart.Engine, error) {
	def, err := chart.Parse("metered", []byte(fmt.Sprintf(defYAML, limit)))
	if err != nil {
		return nil, err
	}
	return chart.NewEngine(def, chart.NewRegistry().Action("call", c.call))
}

// load creates n executions spread over customers and queues events work events and a finish
// for each, before any worker runs.
func load(ctx context.Context, b *backend, machines worker.Machines, n, customers, events int) error {
	client := &worker.Client{Store: b.store, Transport: b.tr, Known: machines}
	for i := 0; i < n; i += stead.MaxBatch {
		var news []worker.NewExecution
		for j := i; j < min(n, i+stead.MaxBatch); j++ {
			news = append(news, worker.NewExecution{DefinitionID: "metered", ID: fmt.Sprintf("x%06d", j),
				Context: json.RawMessage(fmt.Sprintf(`{"customer":"c%04d"}`, j%customers))})
		}
		if _, err := client.CreateBatch(ctx, news); err != nil {
			return err
		}
	}
	var out []transport.Outgoing
	flush := func() error {
		err := b.tr.PublishBatch(ctx, out)
		out = out[:0]
		return err
	}
	now := time.Now()
	for k := 0; k <= events; k++ {
		for j := range n {
			ev := stead.Event{ID: fmt.Sprintf("x%06d-%d", j, k), Kind: "work", CreatedAt: now}
			if k == events {
				ev.Kind = "finish"
			}
			out = append(out, transport.Outgoing{Group: fmt.Sprintf("x%06d", j), Event: ev})
			if len(out) == transport.MaxBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	if len(out) > 0 {
		return flush()
	}
	return nil
}

// drainAll runs one worker of default settings until every execution is done and returns how
// long it took from its start.
func drainAll(ctx context.Context, b *backend, machines worker.Machines, n int) (time.Duration, error) {
	w, err := worker.New(worker.Config{Store: b.store, Transport: b.tr, Machines: machines, Name: "bench",
		SharedTx: b.shared, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return 0, err
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- w.Run(rctx) }()
	defer func() { stop(); <-done }()
	for {
		c, err := b.store.Count(ctx, stead.ListFilter{Statuses: []stead.Status{stead.StatusDone}})
		if err != nil {
			return 0, err
		}
		if c.Total >= int64(n) {
			return time.Since(start), nil
		}
		select {
		case err := <-done:
			return 0, fmt.Errorf("worker stopped: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (h *harness) drain(ctx context.Context, be, variant string) (float64, error) {
	limit := ""
	switch variant {
	case "per-customer":
		limit = "limit: {key: context.customer, concurrency: 1000000}"
	case "definition":
		limit = "limit: {concurrency: 1000000}"
	}
	c := newCounter(0)
	eng, err := engine(limit, c)
	if err != nil {
		return 0, err
	}
	machines := worker.Machines{"metered": eng}
	b, err := h.open(ctx, be)
	if err != nil {
		return 0, err
	}
	defer b.close()
	if err := load(ctx, b, machines, h.o.executions, h.o.customers, h.o.events); err != nil {
		return 0, err
	}
	took, err := drainAll(ctx, b, machines, h.o.executions)
	if err != nil {
		return 0, err
	}
	return float64(h.o.executions*(h.o.events+2)) / took.Seconds(), nil
}

type bound struct {
	counted, sampled int
	rate             float64
}

func (h *harness) bind(ctx context.Context, be string, customers int) (bound, error) {
	c := newCounter(h.o.action)
	eng, err := engine(fmt.Sprintf("limit: {key: context.customer, concurrency: %d}", h.o.limit), c)
	if err != nil {
		return bound{}, err
	}
	machines := worker.Machines{"metered": eng}
	b, err := h.open(ctx, be)
	if err != nil {
		return bound{}, err
	}
	defer b.close()
	n := customers * h.o.perKey
	if err := load(ctx, b, machines, n, customers, h.o.bindEvents); err != nil {
		return bound{}, err
	}
	c.sample()
	_, err = drainAll(ctx, b, machines, n)
	c.stop()
	if err != nil {
		return bound{}, err
	}
	var out bound
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.counted {
		out.counted = max(out.counted, m)
	}
	for _, m := range c.sampled {
		out.sampled = max(out.sampled, m)
	}
	out.rate = float64(c.work) / c.last.Sub(c.first).Seconds()
	return out, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func spread(xs []float64) string {
	return fmt.Sprintf("%.0f (%.0f–%.0f)", median(xs), slices.Min(xs), slices.Max(xs))
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}
