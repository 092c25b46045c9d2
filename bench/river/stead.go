package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/worker"
	"github.com/steadhq/stead/worker/pgtx"
)

const definitionID = "bench-counter"

// counter is the drain's machine, the same as `stead bench`'s: it counts ticks in the
// execution's context and finishes after the last one. Hand-written, so that the figure is the
// worker's, the store's and the transport's, not the chart engine's.
type counter struct{ last int }

func (c counter) Step(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	next := exe.Clone()
	b := stead.Bundle{ProcessedEventID: ev.ID}
	var n struct {
		N int `json:"n"`
	}
	if len(next.Context) > 0 {
		if err := json.Unmarshal(next.Context, &n); err != nil {
			return nil, b, err
		}
	}
	switch ev.Kind {
	case chart.KindStart:
		next.Status, next.ActivePath = stead.StatusRunning, "counting"
	case "tick":
		n.N++
		if n.N >= c.last {
			next.Status, next.Outcome, next.ActivePath, next.FinishedAt = stead.StatusDone, "success", "done", now
		}
	}
	raw, err := json.Marshal(n)
	if err != nil {
		return nil, b, err
	}
	next.Context, next.UpdatedAt = raw, now
	return next, b, nil
}

// steadSetup is what a drain runs on: a store and a transport in a fresh schema on one pool.
type steadSetup struct {
	pool   *pgxpool.Pool
	schema string
	store  *stead.Store
	tr     *transport.Transport
}

func (s *steadSetup) close() {
	if s.tr != nil {
		s.tr.Close()
	}
	if s.store != nil {
		s.store.Close()
	}
	s.pool.Close()
}

func openStead(ctx context.Context, url, schema string, maxConns int32, rt *roundTrips) (*steadSetup, error) {
	pool, err := openPool(ctx, url, maxConns, rt)
	if err != nil {
		return nil, err
	}
	s := &steadSetup{pool: pool, schema: schema}
	if s.store, err = pgstore.New(ctx, pool, pgstore.WithSchema(schema)); err != nil {
		s.close()
		return nil, err
	}
	if s.tr, err = pgtransport.New(ctx, pool, pgtransport.WithSchema(schema)); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// steadPoolSize is the pool of a worker of loops claim loops (0: the default), as `stead run`
// sizes it: room for each loop on the store and the transport side, the relays and the listener.
func steadPoolSize(loops int) int32 {
	if loops == 0 {
		loops = worker.DefaultConcurrency
	}
	return int32(2*loops + 4)
}

func newSchema() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return "stead_speed_" + hex.EncodeToString(b[:])
}

func dropSchema(ctx context.Context, url, schema string) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
}

// seed creates executions executions and publishes their backlog: a start each (through the
// Client, with the records) and eventsPer-1 ticks each.
func seed(ctx context.Context, s *steadSetup, executions, eventsPer int) error {
	const chunk = 500
	c := &worker.Client{Store: s.store, Transport: s.tr}
	for i := 0; i < executions; i += chunk {
		var news []worker.NewExecution
		for j := i; j < min(i+chunk, executions); j++ {
			news = append(news, worker.NewExecution{DefinitionID: definitionID, ID: fmt.Sprintf("bench-%06d", j)})
		}
		if _, err := c.CreateBatch(ctx, news); err != nil {
			return err
		}
	}
	var out []transport.Outgoing
	flush := func() error {
		if len(out) == 0 {
			return nil
		}
		err := s.tr.PublishBatch(ctx, out)
		out = out[:0]
		return err
	}
	for k := 1; k < eventsPer; k++ {
		for j := 0; j < executions; j++ {
			out = append(out, transport.Outgoing{Group: fmt.Sprintf("bench-%06d", j), Event: stead.Event{
				ID: fmt.Sprintf("tick-%d", k), Kind: "tick", CreatedAt: time.Now()}})
			if len(out) == chunk {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// workerMode is how a drain's worker is configured: zero values are the worker's defaults, the
// ones a user who sets nothing gets.
type workerMode struct {
	name   string
	loops  int  // Config.Concurrency (0: default)
	batch  int  // Config.BatchSize (0: default)
	shared bool // Config.SharedTx = pgtx.New(...)
	depth  int  // Config.GroupDepth (0: default)
}

func (m workerMode) loopsOrDefault() int {
	if m.loops == 0 {
		return worker.DefaultConcurrency
	}
	return m.loops
}

func (m workerMode) batchOrDefault() int {
	if m.batch == 0 {
		return worker.DefaultBatchSize
	}
	return m.batch
}

func (m workerMode) config(s *steadSetup, last int) (worker.Config, error) {
	cfg := worker.Config{
		Store: s.store, Transport: s.tr,
		Machines:    worker.Machines{definitionID: counter{last: last}},
		Concurrency: m.loops, BatchSize: m.batch, GroupDepth: m.depth,
	}
	if m.shared {
		db, err := pgtx.New(s.store, s.tr)
		if err != nil {
			return cfg, err
		}
		cfg.SharedTx = db
	}
	return cfg, nil
}

// steadRound seeds executions×eventsPer events in a fresh schema, then runs one worker in mode
// and measures from its start until the last event committed.
func steadRound(ctx context.Context, h *harness, mode workerMode, executions, eventsPer int) (measure, error) {
	rt := &roundTrips{}
	schema := newSchema()
	defer dropSchema(context.WithoutCancel(ctx), h.url, schema)
	s, err := openStead(ctx, h.url, schema, steadPoolSize(mode.loops), rt)
	if err != nil {
		return measure{}, err
	}
	defer s.close()
	if err := seed(ctx, s, executions, eventsPer); err != nil {
		return measure{}, fmt.Errorf("stead seed: %w", err)
	}
	total := executions * eventsPer
	var done atomic.Int64
	finished := make(chan struct{})
	var once sync.Once
	cfg, err := mode.config(s, eventsPer-1)
	if err != nil {
		return measure{}, err
	}
	cfg.Name = "speed"
	cfg.OnCommit = func(*stead.Execution, stead.Event, time.Time) {
		if done.Add(1) == int64(total) {
			once.Do(func() { close(finished) })
		}
	}
	w, err := worker.New(cfg)
	if err != nil {
		return measure{}, err
	}
	if _, err := s.pool.Exec(ctx, "CHECKPOINT"); err != nil {
		return measure{}, err
	}
	if h.functions {
		if _, err := s.pool.Exec(ctx, "SELECT pg_stat_reset()"); err != nil {
			return measure{}, err
		}
	}
	m, err := h.begin(ctx, rt)
	if err != nil {
		return measure{}, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	werr := make(chan error, 1)
	go func() { werr <- w.Run(runCtx) }()
	timeout := time.NewTimer(h.limit)
	defer timeout.Stop()
	if h.cpuProfile != "" && mode.shared && mode.batch != 1 {
		if f, err := os.Create(h.cpuProfile); err == nil {
			if err := pprof.StartCPUProfile(f); err == nil {
				defer func() { pprof.StopCPUProfile(); f.Close() }()
			}
		}
	}
	if h.perf != "" && mode.shared {
		// A profile of the server's processes while the drain runs (-perf).
		time.Sleep(300 * time.Millisecond)
		cmd := exec.CommandContext(ctx, "perf", "record", "-F", "999", "-g", "-o", h.perf,
			"-p", strings.Join(h.meter.children(), ","), "--", "sleep", "3")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Printf("perf: %v: %s\n", err, out)
		}
	}
	select {
	case <-finished:
	case <-timeout.C:
	case <-ctx.Done():
	}
	res, err := h.end(ctx, m, int(done.Load()), rt)
	res.partial = done.Load() < int64(total)
	stop()
	if h.functions {
		time.Sleep(1500 * time.Millisecond) // backends report their counts within a second
		printFunctions(ctx, s, schema, int(done.Load()))
	}
	if rerr := <-werr; err == nil && rerr != nil {
		err = rerr
	}
	return res, err
}

// printFunctions prints the calls and the server time per event of each of stead's functions in
// schema since the round's start.
func printFunctions(ctx context.Context, s *steadSetup, schema string, events int) {
	rows, err := s.pool.Query(ctx, `SELECT funcname, calls, total_time, self_time FROM pg_stat_user_functions
		WHERE schemaname = $1 ORDER BY total_time DESC`, schema)
	if err != nil {
		fmt.Println("functions:", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var calls int64
		var total, self float64
		if err := rows.Scan(&name, &calls, &total, &self); err != nil {
			fmt.Println("functions:", err)
			return
		}
		fmt.Printf("    %-28s calls %7d  total %7.1f µs/event  self %7.1f µs/event\n", name, calls,
			1000*total/float64(max(events, 1)), 1000*self/float64(max(events, 1)))
	}
}
