package worker_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/worker"
	"github.com/steadhq/stead/worker/pgtx"
	"github.com/steadhq/stead/worker/sqlitetx"
	_ "modernc.org/sqlite" // the effects ledger of the process tests
)

// Environment variables that turn the test binary into a worker process (see TestMain).
const (
	envHelperStore   = "STEAD_TEST_HELPER_STORE"
	envHelperSchema  = "STEAD_TEST_HELPER_SCHEMA"
	envHelperEffects = "STEAD_TEST_HELPER_EFFECTS"
	envHelperName    = "STEAD_TEST_HELPER_NAME"
	envHelperShared  = "STEAD_TEST_HELPER_SHARED" // "1": the one-transaction mode (SharedTx, or Finisher on SQLite)
	// envHelperPause is how long each "record" action takes (a Go duration; default 1 ms), and
	// envHelperMaxWorkers the worker's MaxWorkers (default: the worker's default).
	envHelperPause      = "STEAD_TEST_HELPER_PAUSE"
	envHelperMaxWorkers = "STEAD_TEST_HELPER_MAX_WORKERS"
)

// TestMain runs the package's tests, or, when the helper variables are set, a worker process for
// the crash and multi-process tests: it works until SIGTERM or SIGINT, then shuts down gracefully
// and exits 0.
func TestMain(m *testing.M) {
	if os.Getenv(envHelperStore) != "" {
		os.Exit(helperWorker())
	}
	os.Exit(m.Run())
}

// effectsDefinition counts "work" events with an action that also writes an external side
// effect keyed by the action's idempotency key, and finishes on "finish".
func effectsDefinition() (*chart.Definition, error) {
	b := chart.New("effects").Initial("working")
	w := b.State("working")
	w.On("work", "").Do("record")
	w.On("finish", "finished")
	b.State("finished").Final(chart.OutcomeSuccess)
	return b.Definition()
}

// effectsLedger is the external system of the process tests: one row per action key, with how
// many times the action ran for it (a step that ran but whose commit was lost runs again with
// the same key).
type effectsLedger struct{ db *sql.DB }

func openLedger(path string) (*effectsLedger, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS effects (
		key TEXT PRIMARY KEY, execution TEXT NOT NULL, event TEXT NOT NULL,
		worker TEXT NOT NULL, runs INTEGER NOT NULL DEFAULT 1)`); err != nil {
		db.Close()
		return nil, err
	}
	return &effectsLedger{db: db}, nil
}

func (l *effectsLedger) record(key, exe, event, by string) error {
	_, err := l.db.Exec(`INSERT INTO effects (key, execution, event, worker) VALUES (?, ?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET runs = runs + 1`, key, exe, event, by)
	return err
}

func effectsMachine(ledger *effectsLedger, name string, pause time.Duration) (worker.Machines, error) {
	def, err := effectsDefinition()
	if err != nil {
		return nil, err
	}
	reg := chart.NewRegistry().Action("record", func(c chart.ActionContext) (chart.ActionResult, error) {
		if ledger != nil {
			if err := ledger.record(c.Key(), c.ExecutionID, c.Event.ID, name); err != nil {
				return chart.ActionResult{}, err
			}
		}
		if pause > 0 {
			select {
			case <-time.After(pause):
			case <-c.Context().Done():
				return chart.ActionResult{}, c.Context().Err()
			}
		}
		return chart.ActionResult{Set: map[string]any{"n": c.Float("n") + 1}}, nil
	})
	e, err := chart.NewEngine(def, reg)
	if err != nil {
		return nil, err
	}
	return worker.Machines{"effects": e}, nil
}

func helperWorker() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := openBackend(ctx, os.Getenv(envHelperStore), os.Getenv(envHelperSchema))
	if err != nil {
		log.Error("open", slog.Any("err", err))
		return 3
	}
	defer b.Close()
	ledger, err := openLedger(os.Getenv(envHelperEffects))
	if err != nil {
		log.Error("ledger", slog.Any("err", err))
		return 3
	}
	defer ledger.db.Close()
	name := os.Getenv(envHelperName)
	pause, maxWorkers := time.Millisecond, 0
	if v := os.Getenv(envHelperPause); v != "" {
		if pause, err = time.ParseDuration(v); err != nil {
			log.Error("pause", slog.Any("err", err))
			return 3
		}
	}
	if v := os.Getenv(envHelperMaxWorkers); v != "" {
		if maxWorkers, err = strconv.Atoi(v); err != nil {
			log.Error("max workers", slog.Any("err", err))
			return 3
		}
	}
	machines, err := effectsMachine(ledger, name, pause)
	if err != nil {
		log.Error("machine", slog.Any("err", err))
		return 3
	}
	constructs, err := newConstructMachines()
	if err != nil {
		log.Error("machines", slog.Any("err", err))
		return 3
	}
	maps.Copy(machines, constructs)
	var shared worker.SharedDB
	var fin worker.Finisher
	switch {
	case os.Getenv(envHelperShared) != "1":
	case b.db != nil:
		if fin, err = sqlitetx.New(b.db, b.Store, b.Transport); err != nil {
			log.Error("finisher", slog.Any("err", err))
			return 3
		}
	default:
		if shared, err = pgtx.New(b.Store, b.Transport); err != nil {
			log.Error("shared", slog.Any("err", err))
			return 3
		}
	}
	w, err := worker.New(worker.Config{
		Store: b.Store, Transport: b.Transport, Machines: machines, Name: name,
		Concurrency: 4, BatchSize: 8, Visibility: 2 * time.Second, RelayLease: 2 * time.Second,
		RelayInterval: 200 * time.Millisecond, IdleWait: 50 * time.Millisecond, RetryDelay: 50 * time.Millisecond,
		SharedTx: shared, Finisher: fin, Logger: log, MaxWorkers: maxWorkers,
	})
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

// backendCase is a store and transport the end-to-end tests run on.
type backendCase struct {
	name string
	spec func(t *testing.T) (spec, schema string)
	// shared is the one-transaction mode: PostgreSQL's shared transaction (SharedTx) or SQLite's
	// finisher (Finisher), each round's commit, publish and acks in one transaction.
	shared bool
	batch  int
}

// helperEnv is what a worker process of c needs in its environment.
func (c backendCase) helperEnv() []string {
	if c.shared {
		return []string{envHelperShared + "=1"}
	}
	return nil
}

// sharedTx reports whether c runs in PostgreSQL's shared transaction, which holds a batch from
// its claim to its commit.
func (c backendCase) sharedTx() bool { return c.shared && !strings.HasPrefix(c.name, "sqlite") }

func sqliteSpec(t *testing.T) (string, string) { return filepath.Join(t.TempDir(), "stead.db"), "" }

func pgSpec(t *testing.T) (string, string) { return pgdbtest.URL(), pgdbtest.Schema(t) }

// bouncerSpec is the test run's PgBouncer in transaction mode, in front of the test server.
func bouncerSpec(t *testing.T) (string, string) { return pgdbtest.BouncerURL(t), pgdbtest.Schema(t) }

var backendCases = []backendCase{
	{"sqlite unbatched", sqliteSpec, false, 1},
	{"sqlite batched", sqliteSpec, false, 32},
	{"postgres unbatched", pgSpec, false, 1},
	{"postgres batched", pgSpec, false, 32},
	{"postgres shared-tx unbatched", pgSpec, true, 1},
	{"postgres shared-tx batched", pgSpec, true, 32},
	{"pgbouncer batched", bouncerSpec, false, 32},
	{"pgbouncer shared-tx batched", bouncerSpec, true, 32},
	// shared on SQLite: each round's commit, publish and acks in one transaction (Finisher).
	{"sqlite one-tx unbatched", sqliteSpec, true, 1},
	{"sqlite one-tx batched", sqliteSpec, true, 32},
}

// sqliteOneTx is the backend case of SQLite's one-transaction mode, batched.
var sqliteOneTx = backendCases[len(backendCases)-1]

// runFleet starts n workers of case c on b, with the end-to-end tests' short intervals, and
// stops them when the test ends.
func runFleet(t *testing.T, b *testBackend, c backendCase, machines worker.Machines, clock *testClock, n int) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	for i := range n {
		w, err := worker.New(worker.Config{
			Store: b.Store, Transport: b.Transport, Machines: machines, Name: fmt.Sprintf("w%d", i),
			Concurrency: 2, BatchSize: c.batch, SharedTx: b.shared(t, c.shared), Finisher: b.finisher(t, c.shared), Clock: clock.Now,
			TimerInterval: 20 * time.Millisecond, IdleWait: 50 * time.Millisecond,
			RelayInterval: 500 * time.Millisecond, RetryDelay: 50 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if err := w.Run(ctx); err != nil {
				t.Errorf("worker %d: %v", i, err)
			}
		})
	}
}

func openCase(t *testing.T, c backendCase) (*testBackend, string, string) {
	t.Helper()
	spec, schema := c.spec(t)
	b, err := openBackend(context.Background(), spec, schema)
	if err != nil {
		t.Fatalf("open %s: %v", c.name, err)
	}
	t.Cleanup(func() { b.Close() })
	return b, spec, schema
}

// testClock stands still until the test moves it, so that the 5 s payment timers fire when the
// test says, however slow the machine (or the race detector) is.
type testClock struct {
	base   time.Time
	offset atomic.Int64
}

func (c *testClock) Now() time.Time { return c.base.Add(time.Duration(c.offset.Load())) }

// orderOutcomes maps the sample order flow's "outcome" input to the status and outcome the
// order must end with.
var orderOutcomes = []struct {
	input   string
	status  stead.Status
	outcome string
	regions bool // whether fulfilment (two region children) ran
}{
	{"ok", stead.StatusDone, "success", true},
	{"declined", stead.StatusDone, "declined", false},
	{"timeout", stead.StatusDone, "expired", false},
	{"error", stead.StatusDone, "failure", false},
	{"out_of_stock", stead.StatusDone, "refunded", true},
	{"crash", stead.StatusDone, "refunded", true},
}

// TestEndToEndOrders runs many sample orders through four workers on every backend and mode and
// checks that each reaches the outcome its input prescribes, timers firing through an injected
// clock, regions running as children and joining.
func TestEndToEndOrders(t *testing.T) {
	t.Parallel()
	for _, c := range backendCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b, _, _ := openCase(t, c)
			def, err := chart.SampleOrderFlow()
			if err != nil {
				t.Fatal(err)
			}
			engine, err := chart.NewEngine(def, chart.RegisterSampleActions(chart.NewRegistry()))
			if err != nil {
				t.Fatal(err)
			}
			machines := worker.Machines{"order": engine}
			clock := &testClock{base: time.Now()}
			ctx := context.Background()
			const orders = 120
			client := &worker.Client{Store: b.Store, Transport: b.Transport, Known: machines, Clock: clock.Now}
			var news []worker.NewExecution
			for i := range orders {
				o := orderOutcomes[i%len(orderOutcomes)]
				news = append(news, worker.NewExecution{DefinitionID: "order", ID: fmt.Sprintf("order-%03d", i),
					Context: fmt.Appendf(nil, `{"order_id":"o%d","amount":%d,"outcome":%q}`, i, 10+i, o.input)})
			}
			if _, err := client.CreateBatch(ctx, news); err != nil {
				t.Fatal(err)
			}
			runFleet(t, b, c, machines, clock, 4)

			finished := func() int {
				n := 0
				for i := range orders {
					exe, err := b.Store.Load(ctx, fmt.Sprintf("order-%03d", i))
					if err == nil && exe.Status.Finished() {
						n++
					}
				}
				return n
			}
			stuck := func() string {
				out := ""
				for i := range orders {
					exe, err := b.Store.Load(ctx, fmt.Sprintf("order-%03d", i))
					if err != nil || !exe.Status.Finished() {
						if len(out) < 3000 {
							out += fmt.Sprintf("%s (%s): %v %s %s children=%v\n", exe.ID, orderOutcomes[i%len(orderOutcomes)].input, err, exe.Status, exe.ActivePath, exe.Children)
						}
					}
				}
				return out
			}
			timeouts := 0
			for i := range orders {
				if orderOutcomes[i%len(orderOutcomes)].input == "timeout" {
					timeouts++
				}
			}
			waitUntil(t, 60*time.Second, "every order but the unpaid ones finished", func() bool { return finished() == orders-timeouts }, stuck)
			if t.Failed() {
				return
			}
			clock.offset.Add(int64(10 * time.Second)) // past the 5 s payment timeout
			waitUntil(t, 60*time.Second, "the unpaid orders expired", func() bool { return finished() == orders })

			children := 0
			for i := range orders {
				want := orderOutcomes[i%len(orderOutcomes)]
				id := fmt.Sprintf("order-%03d", i)
				exe, err := b.Store.Load(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if exe.Status != want.status || exe.Outcome != want.outcome {
					t.Errorf("%s (%s): %s/%s, want %s/%s", id, want.input, exe.Status, exe.Outcome, want.status, want.outcome)
				}
				if want.regions {
					if len(exe.Children) != 2 {
						t.Errorf("%s: %d children, want 2", id, len(exe.Children))
					}
					for cid := range exe.Children {
						child, err := b.Store.Load(ctx, cid)
						if err != nil || child.ParentID != id || !child.Status.Finished() {
							t.Errorf("%s: child %s: %+v %v", id, cid, child, err)
						}
						children++
					}
				}
				if tm, err := b.Store.Timers(ctx, id); err != nil || len(tm) != 0 {
					t.Errorf("%s: timers left %v %v", id, tm, err)
				}
			}
			if children == 0 {
				t.Fatal("no region children ran")
			}
			waitUntil(t, 10*time.Second, "outbox and spawns drained", func() bool {
				o, err1 := b.Store.PendingOutbox(ctx, "", 5)
				s, err2 := b.Store.PendingSpawns(ctx, "", 5)
				return err1 == nil && err2 == nil && len(o) == 0 && len(s) == 0
			})
		})
	}
}

func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool, explain ...func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			why := ""
			for _, e := range explain {
				why += "\n" + e()
			}
			t.Fatalf("timed out after %v waiting until %s%s", within, what, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// workerProcess is a worker running in a child process (the test binary in helper mode).
type workerProcess struct {
	cmd  *exec.Cmd
	done chan error
}

func startWorkerProcess(t *testing.T, spec, schema, effects, name string, env ...string) *workerProcess {
	t.Helper()
	// Create the ledger, in WAL mode, before any process opens it: two processes that do both
	// at once can fail the switch to WAL with SQLITE_BUSY, whatever their busy timeout.
	ledger, err := openLedger(effects)
	if err != nil {
		t.Fatalf("create the effects ledger: %v", err)
	}
	if err := ledger.db.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHelperStore+"="+spec, envHelperSchema+"="+schema,
		envHelperEffects+"="+effects, envHelperName+"="+name)
	cmd.Env = append(cmd.Env, env...)
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

// seedEffects creates executions of the effects definition and queues `work` work events and a
// finish for each.
func seedEffects(t *testing.T, b *testBackend, executions, work int) []string {
	t.Helper()
	ctx := context.Background()
	c := &worker.Client{Store: b.Store, Transport: b.Transport}
	var news []worker.NewExecution
	var idsOut []string
	for i := range executions {
		id := fmt.Sprintf("fx-%03d", i)
		idsOut = append(idsOut, id)
		news = append(news, worker.NewExecution{DefinitionID: "effects", ID: id})
	}
	if _, err := c.CreateBatch(ctx, news); err != nil {
		t.Fatal(err)
	}
	for _, id := range idsOut {
		for k := range work {
			if _, err := c.Send(ctx, id, stead.Event{ID: fmt.Sprintf("work-%d", k), Kind: "work"}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Send(ctx, id, stead.Event{ID: "finish", Kind: "finish"}); err != nil {
			t.Fatal(err)
		}
	}
	return idsOut
}

// checkEffects verifies that every work event was applied exactly once: the execution counted it
// once, and the ledger holds exactly one action key for each (execution, event). It returns the
// rows per worker and how many keys ran more than once (steps replayed after a crash, the
// at-least-once window of external effects).
func checkEffects(t *testing.T, b *testBackend, ledgerPath string, exes []string, work int) (map[string]int, int) {
	t.Helper()
	ctx := context.Background()
	for _, id := range exes {
		exe, err := b.Store.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var n struct{ N float64 }
		if err := json.Unmarshal(exe.Context, &n); err != nil {
			t.Fatal(err)
		}
		if exe.Status != stead.StatusDone || int(n.N) != work {
			t.Errorf("%s: status %s, n=%v; want done with n=%d", id, exe.Status, n.N, work)
		}
	}
	l, err := openLedger(ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	defer l.db.Close()
	var pairs, keys, dupPairs int
	if err := l.db.QueryRow(`SELECT count(DISTINCT execution || '/' || event), count(*) FROM effects`).Scan(&pairs, &keys); err != nil {
		t.Fatal(err)
	}
	if err := l.db.QueryRow(`SELECT count(*) FROM (SELECT 1 FROM effects GROUP BY execution, event HAVING count(*) > 1)`).Scan(&dupPairs); err != nil {
		t.Fatal(err)
	}
	if want := len(exes) * work; pairs != want || keys != want || dupPairs != 0 {
		t.Errorf("ledger: %d (execution, event) pairs, %d keys, %d pairs applied twice; want %d, %d, 0", pairs, keys, dupPairs, want, want)
	}
	var replayed int
	if err := l.db.QueryRow(`SELECT count(*) FROM effects WHERE runs > 1`).Scan(&replayed); err != nil {
		t.Fatal(err)
	}
	byWorker := map[string]int{}
	rows, err := l.db.Query(`SELECT worker, count(*) FROM effects GROUP BY worker`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var w string
		var n int
		if err := rows.Scan(&w, &n); err != nil {
			t.Fatal(err)
		}
		byWorker[w] = n
	}
	return byWorker, replayed
}

func ledgerCount(t *testing.T, path string) int {
	l, err := openLedger(path)
	if err != nil {
		return 0
	}
	defer l.db.Close()
	var n int
	if err := l.db.QueryRow(`SELECT count(*) FROM effects`).Scan(&n); err != nil {
		return 0
	}
	return n
}

func allDone(b *testBackend, exes []string) bool {
	for _, id := range exes {
		exe, err := b.Store.Load(context.Background(), id)
		if err != nil || exe.Status != stead.StatusDone {
			return false
		}
	}
	return true
}

// runUntilAllDone runs a worker with cfg until every execution of exes is done, then stops it
// and fails the test if Run returned an error.
func runUntilAllDone(t *testing.T, b *testBackend, exes []string, cfg worker.Config, explain ...func() string) {
	t.Helper()
	w, err := worker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	waitUntil(t, 60*time.Second, "all done", func() bool { return allDone(b, exes) }, explain...)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestWorkerProcessKilled kills a worker process with SIGKILL in the middle of a run, starts
// another, and checks that no event was lost and none applied twice. The second process is then
// stopped with SIGTERM and must exit cleanly (graceful shutdown of a real process).
func TestWorkerProcessKilled(t *testing.T) {
	t.Parallel()
	for _, c := range []backendCase{{"sqlite", sqliteSpec, false, 8}, {"sqlite one-tx", sqliteSpec, true, 8}, {"postgres", pgSpec, false, 8}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b, spec, schema := openCase(t, c)
			ledger := filepath.Join(t.TempDir(), "effects.db")
			const executions, work = 20, 30
			exes := seedEffects(t, b, executions, work)
			first := startWorkerProcess(t, spec, schema, ledger, "first", c.helperEnv()...)
			waitUntil(t, 60*time.Second, "the first worker applied some events", func() bool { return ledgerCount(t, ledger) >= 100 })
			if err := first.stop(t, syscall.SIGKILL); err == nil {
				t.Fatal("SIGKILLed worker exited cleanly: it was not killed mid-run")
			}
			if allDone(b, exes) {
				t.Fatal("everything was done before the kill; the test proves nothing")
			}
			second := startWorkerProcess(t, spec, schema, ledger, "second", c.helperEnv()...)
			waitUntil(t, 90*time.Second, "the second worker finished the run", func() bool { return allDone(b, exes) })
			if err := second.stop(t, syscall.SIGTERM); err != nil {
				t.Fatalf("worker did not exit cleanly on SIGTERM: %v", err)
			}
			byWorker, replayed := checkEffects(t, b, ledger, exes, work)
			if byWorker["first"] == 0 || byWorker["second"] == 0 {
				t.Errorf("work by worker %v: both processes should have applied events", byWorker)
			}
			t.Logf("effects by worker %v; %d action keys ran twice (steps cut by the kill before their commit)", byWorker, replayed)
		})
	}
}

// TestSharedTxHungWorkerLosesItsGroups stops a worker process in the shared-transaction mode
// with SIGSTOP in the middle of a run and keeps it stopped: its open transactions hold the
// groups they claimed, and the database must end them (the transaction's idle and statement
// timeouts) so that another worker takes those executions over within the 2 s Visibility, not
// after the stopped one resumes. Nothing may be lost or applied twice.
func TestSharedTxHungWorkerLosesItsGroups(t *testing.T) {
	t.Parallel()
	c := backendCase{"postgres shared-tx", pgSpec, true, 8}
	b, spec, schema := openCase(t, c)
	ledger := filepath.Join(t.TempDir(), "effects.db")
	const executions, work = 20, 30
	exes := seedEffects(t, b, executions, work)
	hung := startWorkerProcess(t, spec, schema, ledger, "hung", envHelperShared+"=1")
	waitUntil(t, 60*time.Second, "the worker applied some events", func() bool { return ledgerCount(t, ledger) >= 60 })
	if err := hung.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	t.Cleanup(func() { _ = hung.cmd.Process.Signal(syscall.SIGCONT) })
	// The takeover worker records its effects in a ledger of its own, merged into the stopped
	// worker's at the end: the stopped process may hold the shared file's write lock, which
	// would stall every other writer of it (an artifact of the test's ledger, not of stead).
	own := filepath.Join(t.TempDir(), "takeover.db")
	l, err := openLedger(own)
	if err != nil {
		t.Fatal(err)
	}
	defer l.db.Close()
	machines, err := effectsMachine(l, "takeover", 0)
	if err != nil {
		t.Fatal(err)
	}
	// The stopped worker stays stopped until every execution is done (or the wait gives up). The
	// takeover worker keeps the default lease: its transactions get a third of it, which a
	// machine loaded by the race detector and parallel tests needs.
	runUntilAllDone(t, b, exes, worker.Config{Store: b.Store, Transport: b.Transport, Machines: machines,
		Name: "takeover", Concurrency: 4, BatchSize: 8, SharedTx: b.shared(t, true),
		IdleWait: 20 * time.Millisecond, RetryDelay: 20 * time.Millisecond}, func() string {
		return heldBy(t, schema)
	})
	took := time.Since(stopped)
	if took > 20*time.Second {
		t.Errorf("all done %v after the SIGSTOP: the stopped worker held executions far past the 2 s Visibility", took)
	}
	if err := hung.stop(t, syscall.SIGKILL); err == nil {
		t.Fatal("the stopped worker exited cleanly: it was not running")
	}
	if _, err := l.db.Exec(`ATTACH DATABASE ? AS hung`, ledger); err != nil {
		t.Fatal(err)
	}
	if _, err := l.db.Exec(`INSERT INTO hung.effects (key, execution, event, worker, runs)
		SELECT key, execution, event, worker, runs FROM main.effects WHERE true
		ON CONFLICT (key) DO UPDATE SET runs = runs + excluded.runs`); err != nil {
		t.Fatal(err)
	}
	byWorker, replayed := checkEffects(t, b, ledger, exes, work)
	t.Logf("all done %v after the SIGSTOP; effects by worker %v; %d keys ran twice", took.Round(time.Millisecond), byWorker, replayed)
	if byWorker["takeover"] == 0 {
		t.Fatalf("the takeover worker applied nothing: %v", byWorker)
	}
}

// heldBy describes the groups of schema that are held and the sessions of the server that are in
// a transaction, for a test that timed out waiting for them.
func heldBy(t *testing.T, schema string) string {
	pool := pgdbtest.Pool(t)
	ctx := context.Background()
	out := ""
	var msgs int
	_ = pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "transport_messages"}.Sanitize()).Scan(&msgs)
	out += fmt.Sprintf("%d messages queued\n", msgs)
	rows, err := pool.Query(ctx, "SELECT id, status, coalesce(active_path, ''), version FROM "+
		pgx.Identifier{schema, "stead_executions"}.Sanitize()+" WHERE status <> 'done'")
	if err == nil {
		for rows.Next() {
			var id, st, path string
			var v int64
			_ = rows.Scan(&id, &st, &path, &v)
			out += fmt.Sprintf("execution %s %s %s v%d\n", id, st, path, v)
		}
		rows.Close()
	}
	rows, err = pool.Query(ctx, "SELECT group_id, coalesce(locked_by, ''), coalesce(lease_until::text, '') FROM "+
		pgx.Identifier{schema, "transport_groups"}.Sanitize())
	if err == nil {
		for rows.Next() {
			var g, by, until string
			_ = rows.Scan(&g, &by, &until)
			out += fmt.Sprintf("group %s held by %s until %s\n", g, by, until)
		}
		rows.Close()
	}
	rows, err = pool.Query(ctx, `SELECT pid, coalesce(state, ''), coalesce(wait_event_type, ''), coalesce(wait_event, ''),
		coalesce(now() - xact_start, '0')::text, left(query, 80) FROM pg_stat_activity WHERE xact_start IS NOT NULL AND pid <> pg_backend_pid()`)
	if err == nil {
		for rows.Next() {
			var pid int
			var state, wt, we, age, q string
			_ = rows.Scan(&pid, &state, &wt, &we, &age, &q)
			out += fmt.Sprintf("session %d %s %s/%s for %s: %s\n", pid, state, wt, we, age, q)
		}
		rows.Close()
	}
	return out
}

// TestTwoWorkerProcessesOneSQLiteFile runs two worker processes on one SQLite file at once.
func TestTwoWorkerProcessesOneSQLiteFile(t *testing.T) {
	t.Parallel()
	b, spec, schema := openCase(t, backendCases[0])
	ledger := filepath.Join(t.TempDir(), "effects.db")
	const executions, work = 20, 20
	exes := seedEffects(t, b, executions, work)
	p1 := startWorkerProcess(t, spec, schema, ledger, "p1")
	p2 := startWorkerProcess(t, spec, schema, ledger, "p2")
	waitUntil(t, 90*time.Second, "both workers finished the run", func() bool { return allDone(b, exes) })
	for _, p := range []*workerProcess{p1, p2} {
		if err := p.stop(t, syscall.SIGTERM); err != nil {
			t.Fatalf("worker did not exit cleanly on SIGTERM: %v", err)
		}
	}
	byWorker, replayed := checkEffects(t, b, ledger, exes, work)
	// Without a crash a step runs twice only if its commit failed (SQLITE_BUSY under two
	// writers) and it was retried; its effect key is the same, so the ledger shows it.
	t.Logf("effects by worker %v; %d action keys ran twice (retried commits)", byWorker, replayed)
}

// TestNoGoroutineLeak runs workers on SQLite and PostgreSQL (separate and shared-transaction
// modes), stops them, closes the backends, and checks that every goroutine they started ended.
// It does not call t.Parallel: the count must be this test's alone.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, c := range []backendCase{backendCases[1], backendCases[3], backendCases[5], sqliteOneTx} {
		t.Run(c.name, func(t *testing.T) {
			b, _, _ := openCase(t, c)
			machines, err := effectsMachine(nil, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			exes := seedEffects(t, b, 5, 5)
			runUntilAllDone(t, b, exes, worker.Config{Store: b.Store, Transport: b.Transport, Machines: machines,
				Concurrency: 3, BatchSize: c.batch, SharedTx: b.shared(t, c.shared), Finisher: b.finisher(t, c.shared), IdleWait: 20 * time.Millisecond})
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutine leak: %d running, %d before\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// flaky fails its first steps of "work" events, as an engine or action outage would.
type flaky struct {
	worker.Machine
	left atomic.Int64
}

func (f *flaky) Step(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	if ev.Kind == "work" && f.left.Add(-1) >= 0 {
		return nil, stead.Bundle{}, errors.New("transient failure")
	}
	return f.Machine.Step(exe, ev, now)
}

// TestParkAndRetry checks, in every mode, that a message for a suspended execution is parked
// (not applied, not lost) until it is resumed, and that a failing step is retried until it
// succeeds, applied once.
func TestParkAndRetry(t *testing.T) {
	t.Parallel()
	for _, c := range backendCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b, _, _ := openCase(t, c)
			ctx := context.Background()
			m, err := effectsMachine(nil, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			fl := &flaky{Machine: m["effects"]}
			fl.left.Store(3)
			machines := worker.Machines{"effects": fl}
			exes := []string{"park-0", "park-1"}
			cl := &worker.Client{Store: b.Store, Transport: b.Transport}
			for _, id := range exes {
				if _, err := cl.Create(ctx, "effects", id, nil); err != nil {
					t.Fatal(err)
				}
			}
			w, err := worker.New(worker.Config{Store: b.Store, Transport: b.Transport, Machines: machines,
				Concurrency: 2, BatchSize: c.batch, SharedTx: b.shared(t, c.shared), Finisher: b.finisher(t, c.shared), IdleWait: 20 * time.Millisecond,
				RetryDelay: 30 * time.Millisecond, SuspendRecheck: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- w.Run(runCtx) }()
			defer func() { stop(); <-done }()
			waitUntil(t, 30*time.Second, "both started", func() bool {
				for _, id := range exes {
					if e, err := b.Store.Load(ctx, id); err != nil || e.Status != stead.StatusRunning {
						return false
					}
				}
				return true
			})
			// Suspend the first (an operator's doing), then queue one work event for each.
			if out, err := cl.Suspend(ctx, exes[0], ""); err != nil || out.Status != stead.StatusSuspended {
				t.Fatalf("suspend: %+v, %v", out, err)
			}
			for _, id := range exes {
				if _, err := cl.Send(ctx, id, stead.Event{ID: "w1", Kind: "work"}); err != nil {
					t.Fatal(err)
				}
			}
			count := func(id string) int {
				e, err := b.Store.Load(ctx, id)
				if err != nil {
					return -1
				}
				var n struct{ N float64 }
				_ = json.Unmarshal(e.Context, &n)
				return int(n.N)
			}
			waitUntil(t, 30*time.Second, "the failing step retried into success", func() bool { return count(exes[1]) == 1 })
			time.Sleep(200 * time.Millisecond) // several park periods
			if n := count(exes[0]); n != 0 {
				t.Fatalf("suspended execution applied an event: n=%d", n)
			}
			if out, err := cl.Resume(ctx, exes[0], ""); err != nil || out.Status != stead.StatusRunning {
				t.Fatalf("resume: %+v, %v", out, err)
			}
			waitUntil(t, 30*time.Second, "the parked event applied after resume", func() bool { return count(exes[0]) == 1 })
			if fl.left.Load() >= 0 {
				t.Fatalf("the flaky machine failed only %d of 3 times", 3-fl.left.Load())
			}
		})
	}
}

// interfering commits a change to an execution from outside the worker, once per execution,
// between the worker's load and its commit, so that the worker's commit loses the
// compare-and-swap and the event must be redelivered.
type interfering struct {
	worker.Machine
	store     *stead.Store
	seen      sync.Map // execution id → struct{}
	conflicts atomic.Int64
}

func (m *interfering) Step(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	if ev.Kind == "work" {
		if _, done := m.seen.LoadOrStore(exe.ID, struct{}{}); !done {
			cur, err := m.store.Load(context.Background(), exe.ID)
			if err == nil {
				if _, err = m.store.Commit(context.Background(), cur, stead.Bundle{}); err == nil {
					m.conflicts.Add(1)
				}
			}
		}
	}
	return m.Machine.Step(exe, ev, now)
}

// TestLostCASRedeliversOnEveryBackend checks, in every mode, that a step whose commit loses the
// compare-and-swap is redelivered and applied once: in the shared-transaction mode the loss rolls
// back the transaction that also held the message's ack.
func TestLostCASRedeliversOnEveryBackend(t *testing.T) {
	t.Parallel()
	for _, c := range backendCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b, _, _ := openCase(t, c)
			machines, err := effectsMachine(nil, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			m := &interfering{Machine: machines["effects"], store: b.Store}
			const work = 3
			exes := seedEffects(t, b, 6, work)
			runUntilAllDone(t, b, exes, worker.Config{Store: b.Store, Transport: b.Transport,
				Machines: worker.Machines{"effects": m}, Concurrency: 2, BatchSize: c.batch,
				SharedTx: b.shared(t, c.shared), Finisher: b.finisher(t, c.shared), IdleWait: 20 * time.Millisecond, RetryDelay: 20 * time.Millisecond})
			for _, id := range exes {
				exe, err := b.Store.Load(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				var n struct{ N float64 }
				if err := json.Unmarshal(exe.Context, &n); err != nil {
					t.Fatal(err)
				}
				if int(n.N) != work {
					t.Errorf("%s: n=%v, want %d (each work event applied once)", id, n.N, work)
				}
			}
			if got := m.conflicts.Load(); got != int64(len(exes)) {
				t.Errorf("%d conflicts injected, want %d", got, len(exes))
			}
		})
	}
}
