package bulk_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/bulk"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/transport/sqlitetransport"
	"github.com/steadhq/stead/worker"
	"github.com/steadhq/stead/worker/pgtx"
)

// Environment variables that turn the test binary into a worker process (see TestMain).
const (
	envStore  = "STEAD_BULK_HELPER_STORE"
	envSchema = "STEAD_BULK_HELPER_SCHEMA"
	envShared = "STEAD_BULK_HELPER_SHARED"
)

// TestMain runs the tests, or a worker process of the crash tests when envStore is set: it works
// until SIGTERM, then shuts down and exits 0.
func TestMain(m *testing.M) {
	if os.Getenv(envStore) != "" {
		os.Exit(helperWorker())
	}
	os.Exit(m.Run())
}

// itemDefinition is the targets' flow: a "bump" counts in the context key n (so an event applied
// twice shows), "finish" ends it, "explode" fails it.
func itemMachines() (worker.Machines, error) {
	b := chart.New("item").Initial("waiting")
	w := b.State("waiting")
	w.On("bump", "").Do("count")
	w.On("explode", "").Do("boom")
	w.On("finish", "finished")
	b.State("finished").Final(chart.OutcomeSuccess)
	b.Retry("boom", *chart.NoRetry()) // "explode" fails the item at once, for the retry jobs
	def, err := b.Definition()
	if err != nil {
		return nil, err
	}
	reg := chart.NewRegistry().
		Action("count", func(c chart.ActionContext) (chart.ActionResult, error) {
			c.SetFloat("n", c.Float("n")+1)
			return chart.ActionResult{}, nil
		}).
		Action("boom", func(c chart.ActionContext) (chart.ActionResult, error) {
			return chart.ActionResult{}, errors.New("boom")
		})
	e, err := chart.NewEngine(def, reg)
	if err != nil {
		return nil, err
	}
	return worker.Machines{"item": e}, nil
}

// rig is a store and a transport with the item and bulk machines.
type rig struct {
	store    *stead.Store
	tr       *transport.Transport
	machines worker.Machines
	client   *worker.Client
	shared   bool
	spec     string // the SQLite path or PostgreSQL URL a worker process opens
	schema   string
}

type backendCase struct {
	name   string
	shared bool // PostgreSQL's shared transaction
	open   func(t *testing.T) (*stead.Store, *transport.Transport, string, string)
}

func openMemory(t *testing.T) (*stead.Store, *transport.Transport, string, string) {
	s, tr := memstore.New(), memtransport.New()
	t.Cleanup(func() { tr.Close(); s.Close() })
	return s, tr, "", ""
}

func openSQLite(t *testing.T) (*stead.Store, *transport.Transport, string, string) {
	path := filepath.Join(t.TempDir(), "stead.db")
	s, tr, closeAll, err := openSpec(context.Background(), path, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAll)
	return s, tr, path, ""
}

func openPostgres(t *testing.T) (*stead.Store, *transport.Transport, string, string) {
	schema := pgdbtest.Schema(t)
	s, tr, closeAll, err := openSpec(context.Background(), pgdbtest.URL(), schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAll)
	return s, tr, pgdbtest.URL(), schema
}

// openSpec opens a store and a transport on one SQLite file or one PostgreSQL pool.
func openSpec(ctx context.Context, spec, schema string) (*stead.Store, *transport.Transport, func(), error) {
	var closers []func() error
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
	}
	var s *stead.Store
	var tr *transport.Transport
	var err error
	if strings.HasPrefix(spec, "postgres://") {
		pool, perr := pgdb.Open(ctx, spec, pgdb.Config{MaxConns: 16})
		if perr != nil {
			return nil, nil, closeAll, perr
		}
		closers = append(closers, func() error { pool.Close(); return nil })
		if s, err = pgstore.New(ctx, pool, pgstore.WithSchema(schema)); err == nil {
			closers = append(closers, s.Close)
			if tr, err = pgtransport.New(ctx, pool, pgtransport.WithSchema(schema)); err == nil {
				closers = append(closers, tr.Close)
			}
		}
	} else {
		db, derr := sqlitedb.Open(ctx, sqlitedb.Config{Path: spec})
		if derr != nil {
			return nil, nil, closeAll, derr
		}
		closers = append(closers, db.Close)
		if s, err = sqlitestore.New(ctx, db); err == nil {
			closers = append(closers, s.Close)
			if tr, err = sqlitetransport.New(ctx, db); err == nil {
				closers = append(closers, tr.Close)
			}
		}
	}
	if err != nil {
		closeAll()
		return nil, nil, func() {}, err
	}
	return s, tr, closeAll, nil
}

var backendCases = []backendCase{
	{"memory", false, openMemory},
	{"sqlite", false, openSQLite},
	{"postgres", false, openPostgres},
	{"postgres shared-tx", true, openPostgres},
}

func newRig(t *testing.T, c backendCase) *rig {
	t.Helper()
	s, tr, spec, schema := c.open(t)
	machines, err := itemMachines()
	if err != nil {
		t.Fatal(err)
	}
	bulk.Register(machines, s, tr, bulk.Options{})
	return &rig{store: s, tr: tr, machines: machines, shared: c.shared, spec: spec, schema: schema,
		client: &worker.Client{Store: s, Transport: tr, Known: machines}}
}

// workerConfig is the tests' worker: short intervals, so that timers and retries come soon.
func workerConfig(s *stead.Store, tr *transport.Transport, machines worker.Machines, shared worker.SharedDB, name string) worker.Config {
	return worker.Config{
		Store: s, Transport: tr, Machines: machines, Name: name, SharedTx: shared,
		Concurrency: 2, BatchSize: 8, TimerInterval: 20 * time.Millisecond, IdleWait: 50 * time.Millisecond,
		RelayInterval: 200 * time.Millisecond, RetryDelay: 50 * time.Millisecond,
		Visibility: 2 * time.Second, RelayLease: 2 * time.Second,
	}
}

// run starts a worker in the test's process, stopped when the test ends.
func (r *rig) run(t *testing.T) {
	t.Helper()
	var shared worker.SharedDB
	if r.shared {
		var err error
		if shared, err = pgtx.New(r.store, r.tr); err != nil {
			t.Fatal(err)
		}
	}
	w, err := worker.New(workerConfig(r.store, r.tr, r.machines, shared, "w"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := w.Run(ctx); err != nil {
			t.Errorf("worker: %v", err)
		}
	})
	t.Cleanup(func() { stop(); wg.Wait() })
}

// items creates n running items with ids prefix-000 …, and waits until they have started.
func (r *rig) items(t *testing.T, prefix string, n int) []string {
	t.Helper()
	ctx := context.Background()
	var news []worker.NewExecution
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%03d", prefix, i)
		ids = append(ids, id)
		news = append(news, worker.NewExecution{DefinitionID: "item", ID: id})
	}
	for len(news) > 0 {
		k := min(len(news), stead.MaxBatch)
		if _, err := r.client.CreateBatch(ctx, news[:k]); err != nil {
			t.Fatalf("create items: %v", err)
		}
		news = news[k:]
	}
	r.waitAll(t, ids, "started", func(e *stead.Execution) bool { return e.Status == stead.StatusRunning })
	return ids
}

func (r *rig) send(t *testing.T, id, kind string) {
	t.Helper()
	if _, err := r.client.Send(context.Background(), id, stead.Event{Kind: kind}); err != nil {
		t.Fatalf("send %s to %s: %v", kind, id, err)
	}
}

func (r *rig) load(t *testing.T, id string) *stead.Execution {
	t.Helper()
	exe, err := r.store.Load(context.Background(), id)
	if err != nil {
		t.Fatalf("load %s: %v", id, err)
	}
	return exe
}

func (r *rig) waitAll(t *testing.T, ids []string, what string, cond func(*stead.Execution) bool) {
	t.Helper()
	var lag []string
	waitUntil(t, 60*time.Second, what, func() bool {
		lag = lag[:0]
		for _, id := range ids {
			exe, err := r.store.Load(context.Background(), id)
			switch {
			case err != nil:
				lag = append(lag, fmt.Sprintf("%s: %v", id, err))
			case !cond(exe):
				lag = append(lag, fmt.Sprintf("%s: %s v%d %s", id, exe.Status, exe.Version, exe.Context))
			}
		}
		return len(lag) == 0
	}, func() string {
		return fmt.Sprintf("%d not yet: %s", len(lag), strings.Join(lag[:min(len(lag), 5)], "; "))
	})
}

// job waits until the job id satisfies cond and returns it.
func (r *rig) job(t *testing.T, id, what string, cond func(bulk.Job) bool) bulk.Job {
	t.Helper()
	var j bulk.Job
	waitUntil(t, 60*time.Second, what, func() bool {
		var err error
		j, err = bulk.Get(context.Background(), r.store, id)
		return err == nil && cond(j)
	}, func() string { return fmt.Sprintf("job %s: %+v", id, j) })
	return j
}

func finished(j bulk.Job) bool { return j.Status.Finished() }

func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool, explain ...func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			msg := ""
			for _, e := range explain {
				msg += "; " + e()
			}
			t.Fatalf("timed out after %v waiting until %s%s", within, what, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// helperWorker is a worker process: the item and bulk machines on the store envStore names.
func helperWorker() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, tr, closeAll, err := openSpec(ctx, os.Getenv(envStore), os.Getenv(envSchema))
	if err != nil {
		log.Error("open", slog.Any("err", err))
		return 3
	}
	defer closeAll()
	machines, err := itemMachines()
	if err != nil {
		log.Error("machines", slog.Any("err", err))
		return 3
	}
	bulk.Register(machines, s, tr, bulk.Options{})
	var shared worker.SharedDB
	if os.Getenv(envShared) == "1" {
		if shared, err = pgtx.New(s, tr); err != nil {
			log.Error("shared", slog.Any("err", err))
			return 3
		}
	}
	cfg := workerConfig(s, tr, machines, shared, os.Getenv("STEAD_BULK_HELPER_NAME"))
	cfg.Logger = log
	w, err := worker.New(cfg)
	if err != nil {
		log.Error("worker", slog.Any("err", err))
		return 3
	}
	if err := w.Run(ctx); err != nil {
		log.Error("run", slog.Any("err", err))
		return 1
	}
	return 0
}

// workerProcess is a worker running in a child process (the test binary as helperWorker).
type workerProcess struct {
	cmd  *exec.Cmd
	done chan error
}

func (r *rig) startProcess(t *testing.T, name string) *workerProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envStore+"="+r.spec, envSchema+"="+r.schema, "STEAD_BULK_HELPER_NAME="+name)
	if r.shared {
		cmd.Env = append(cmd.Env, envShared+"=1")
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start worker process: %v", err)
	}
	p := &workerProcess{cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// stop sends sig and waits for the process to exit, returning its wait error.
func (p *workerProcess) stop(t *testing.T, sig os.Signal) error {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal worker: %v", err)
	}
	select {
	case err := <-p.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("worker process did not exit within 30s of %v", sig)
		return nil
	}
}
