package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/faultproxy"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/worker"
)

// Plan says what a drill does. Zero fields take the defaults of Short.
type Plan struct {
	Executions int           // executions fed with work
	Workers    int           // worker processes at once; every second one in the shared-transaction mode
	Rate       int           // work events published per second
	ArmEvery   int           // every n-th event of an execution arms its timer
	Visibility time.Duration // the workers' lease
	Kills      int           // SIGKILLs of a worker process, each replaced at once
	Stops      int           // SIGSTOPs of a worker process for 1.5 × Visibility (past its lease), then SIGCONT
	Restarts   int           // crashes of the server (immediate stop), each down for Down
	Down       time.Duration // how long the server stays down at each restart
	Burst      int           // work events queued just before each restart: the backlog to recover
	CASRounds  int           // successful compare-and-swap rounds of the CAS race
	CASRacers  int           // racers of the CAS race, half on each of two pools
	Settle     time.Duration // how long the end waits for everything to converge

	// Failover faults, on a primary and a synchronous standby instead of one server (see
	// failover.go); a plan with any of them runs on the pair and makes no Restarts.
	Failovers  int           // the primary killed, the standby promoted (each time the other way)
	BlackHoles int           // the primary's traffic black-holed, the primary killed, the standby promoted
	Partitions int           // one worker's traffic black-holed for 1.5 × Visibility, then healed
	Gap        time.Duration // from the primary's death to the promotion (default 1 s)
}

// Short is the drill ./test.sh runs: every kind of fault once or twice, in about a minute.
func Short() Plan {
	return Plan{Executions: 40, Workers: 2, Rate: 300, ArmEvery: 10, Visibility: 10 * time.Second,
		Kills: 2, Stops: 1, Restarts: 2, Down: time.Second, Burst: 1500, CASRounds: 500, CASRacers: 8,
		Settle: 3 * time.Minute}
}

// Long is the full drill: 20 kills, 5 restarts, 10,000 CAS rounds by 8 racers over two pools.
func Long() Plan {
	return Plan{Executions: 100, Workers: 3, Rate: 400, ArmEvery: 10, Visibility: 10 * time.Second,
		Kills: 20, Stops: 3, Restarts: 5, Down: time.Second, Burst: 3000, CASRounds: 10000, CASRacers: 8,
		Settle: 5 * time.Minute}
}

func (p Plan) withDefaults() Plan {
	d := Short()
	set := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	set(&p.Executions, d.Executions)
	set(&p.Workers, d.Workers)
	set(&p.Rate, d.Rate)
	set(&p.ArmEvery, d.ArmEvery)
	set(&p.Burst, d.Burst)
	set(&p.CASRacers, d.CASRacers)
	if p.Visibility == 0 {
		p.Visibility = d.Visibility
	}
	if p.Down == 0 {
		p.Down = d.Down
	}
	if p.Settle == 0 {
		p.Settle = d.Settle
	}
	return p
}

// Env is where a drill runs.
type Env struct {
	// Dir is a scratch directory: the cluster, the ledger and the workers' logs.
	Dir string
	// Exe is a program that runs one worker when WorkerFromEnv says so (the chaos test binary).
	Exe string
	// Logf reports progress (default: nothing).
	Logf func(format string, args ...any)
}

const schema = "chaos"

// drill is one run of a plan.
type drill struct {
	plan    Plan
	env     Env
	cluster *Cluster
	pool    *pgxpool.Pool
	store   *stead.Store
	tr      *transport.Transport
	ledgers *Ledgers
	feed    *feeder
	rep     *Report

	mu    sync.Mutex
	procs []*process
	gen   int

	// In a failover drill: the pair, and the proxies of every client (the drill's own, -1, and
	// each worker slot) to each node, through which the faults are made.
	pair    *pair
	proxies map[int]*[2]*faultproxy.Proxy
}

// Run runs the plan: a cluster of its own, worker processes fed with work, the faults, then the
// checks. The report holds the figures; Report.Problems lists what must be zero and was not. An
// error means the drill itself could not run.
func Run(ctx context.Context, plan Plan, env Env) (*Report, error) {
	plan = plan.withDefaults()
	if env.Logf == nil {
		env.Logf = func(string, ...any) {}
	}
	d := &drill{plan: plan, env: env, rep: &Report{Plan: plan}}
	start := time.Now()
	defer func() { d.rep.Took = time.Since(start) }()
	if plan.failover() {
		return d.runFailover(ctx)
	}
	var err error
	if d.cluster, err = StartCluster(ctx, filepath.Join(env.Dir, "pg")); err != nil {
		return nil, err
	}
	defer func() {
		if err := d.cluster.Stop(); err != nil {
			env.Logf("%v", err)
		}
	}()
	if err := d.open(ctx); err != nil {
		return nil, err
	}
	defer d.close()
	defer d.stopAll()
	if err := d.run(ctx); err != nil {
		return d.rep, err
	}
	if plan.CASRounds > 0 {
		d.rep.CAS, err = runCAS(ctx, d.cluster.URL(), plan.CASRounds, plan.CASRacers)
		if err != nil {
			return d.rep, err
		}
		env.Logf("CAS race: %d rounds by %d racers in %v", d.rep.CAS.Rounds, d.rep.CAS.Racers, d.rep.CAS.Took.Round(time.Millisecond))
	}
	return d.rep, nil
}

func (d *drill) open(ctx context.Context) error {
	var err error
	if d.pool, err = pgdb.Open(ctx, d.url(-1), pgdb.Config{MaxConns: 8, ConnectAttempts: 120, ConnectDelay: 250 * time.Millisecond}); err != nil {
		return err
	}
	if d.store, err = pgstore.New(ctx, d.pool, pgstore.WithSchema(schema)); err != nil {
		return err
	}
	if d.tr, err = pgtransport.New(ctx, d.pool, pgtransport.WithSchema(schema), pgtransport.WithoutListen()); err != nil {
		return err
	}
	d.ledgers = NewLedgers(d.env.Dir)
	return nil
}

func (d *drill) close() {
	if d.ledgers != nil {
		d.ledgers.Close()
	}
	if d.tr != nil {
		d.tr.Close()
	}
	if d.store != nil {
		d.store.Close()
	}
	if d.pool != nil {
		d.pool.Close()
	}
}

func (d *drill) run(ctx context.Context) error {
	p, logf := d.plan, d.env.Logf
	execs := make([]string, p.Executions)
	news := make([]worker.NewExecution, p.Executions)
	for i := range execs {
		execs[i] = fmt.Sprintf("c-%03d", i)
		news[i] = worker.NewExecution{DefinitionID: DefinitionID, ID: execs[i]}
	}
	client := &worker.Client{Store: d.store, Transport: d.tr}
	for lo := 0; lo < len(news); lo += stead.MaxBatch {
		if _, err := client.CreateBatch(ctx, news[lo:min(lo+stead.MaxBatch, len(news))]); err != nil {
			return err
		}
	}
	for i := range p.Workers {
		if err := d.startWorker(i); err != nil {
			return err
		}
	}
	d.feed = newFeeder(d.tr, execs, p.ArmEvery)
	feedCtx, stopFeed := context.WithCancel(ctx)
	var feeding sync.WaitGroup
	feeding.Go(func() { d.feed.run(feedCtx, p.Rate) })
	defer func() { stopFeed(); feeding.Wait() }()
	if err := d.waitProgress(ctx, 100, time.Minute); err != nil {
		return err
	}
	logf("workers running; faults begin")

	for i := range p.Kills {
		sleep(ctx, time.Duration(500+rand.IntN(1000))*time.Millisecond)
		k := rand.IntN(p.Workers)
		d.mu.Lock()
		victim := d.procs[k]
		d.mu.Unlock()
		victim.kill()
		d.rep.Kills++
		logf("kill %d/%d: SIGKILL %s", i+1, p.Kills, victim.cfg.Name)
		if err := d.startWorker(k); err != nil {
			return err
		}
	}
	for i := range p.Stops {
		sleep(ctx, time.Second)
		k := (i + 1) % p.Workers // the shared-transaction worker first
		d.mu.Lock()
		victim := d.procs[k]
		d.mu.Unlock()
		if err := victim.signal(syscall.SIGSTOP); err != nil {
			return err
		}
		hang := p.Visibility * 3 / 2
		logf("stop %d/%d: SIGSTOP %s (shared transaction: %v) for %v", i+1, p.Stops, victim.cfg.Name, victim.cfg.Shared, hang)
		sleep(ctx, hang)
		if err := victim.signal(syscall.SIGCONT); err != nil {
			return err
		}
		d.rep.Stops++
	}
	if err := d.failovers(ctx); err != nil {
		return err
	}
	for i := range p.Restarts {
		r, err := d.restart(ctx, i)
		if err != nil {
			return err
		}
		d.rep.Restarts = append(d.rep.Restarts, r)
		logf("restart %d/%d: backlog %d; first step %v after the server was up, the backlog applied after %v",
			i+1, p.Restarts, r.Backlog, r.FirstStep.Round(time.Millisecond), r.Drained.Round(time.Millisecond))
	}
	stopFeed()
	feeding.Wait()
	logf("faults over; waiting for the executions to converge")
	return d.verify(ctx)
}

// startWorker starts worker slot k (replacing what was there).
func (d *drill) startWorker(k int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	name := fmt.Sprintf("w%d-%d", k, d.gen)
	cfg := WorkerConfig{URL: d.url(k), Schema: schema, Ledger: d.ledgers.Path(name),
		Name: name, Shared: k%2 == 1, Visibility: d.plan.Visibility}
	p, err := startProcess(d.env.Exe, cfg, filepath.Join(d.env.Dir, "workers.log"))
	if err != nil {
		return err
	}
	if k < len(d.procs) {
		d.procs[k] = p
	} else {
		d.procs = append(d.procs, p)
	}
	return nil
}

// stopAll stops every worker gracefully and records those that did not exit cleanly.
func (d *drill) stopAll() {
	d.mu.Lock()
	procs := d.procs
	d.procs = nil
	d.mu.Unlock()
	for _, p := range procs {
		if err := p.stop(30 * time.Second); err != nil {
			d.rep.UncleanExits = append(d.rep.UncleanExits, fmt.Sprintf("%s: %v", p.cfg.Name, err))
		}
	}
}

// waitProgress waits until the ledger holds n work effects.
func (d *drill) waitProgress(ctx context.Context, n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		got, err := d.ledgers.Count(KindWork)
		if err == nil && got >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chaos: the workers applied %d work events in %v, want %d (see %s)", got, within, n,
				filepath.Join(d.env.Dir, "workers.log"))
		}
		sleep(ctx, 50*time.Millisecond)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// restart queues a burst of work, crashes the server, starts it again and measures how long the
// workers took to step again and to apply the burst. The feeder keeps publishing throughout: its
// publishes that fail during the outage are sent again with the same event ids.
func (d *drill) restart(ctx context.Context, i int) (Restart, error) {
	prefix := fmt.Sprintf("r%d-", i)
	d.feed.publish(ctx, prefix, d.plan.Burst, false)
	r := Restart{Burst: d.plan.Burst}
	if err := d.pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "transport_messages"}.Sanitize()).Scan(&r.Backlog); err != nil {
		return r, err
	}
	up, err := d.cluster.Restart(ctx, d.plan.Down)
	if err != nil {
		return r, err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		at, n, err := d.ledgers.AppliedBy(prefix)
		if err == nil && n == d.plan.Burst {
			if at.After(up) {
				r.Drained = at.Sub(up)
			}
			break
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("chaos: restart %d: %d of the %d burst events applied within 2 minutes of the server coming back", i, n, d.plan.Burst)
		}
		sleep(ctx, 100*time.Millisecond)
	}
	first, ok, err := d.ledgers.FirstAfter(up)
	if err != nil {
		return r, err
	}
	if ok {
		r.FirstStep = first.Sub(up)
	}
	return r, nil
}

// verify waits until every published event is applied and nothing is left in flight, then
// checks the ledger and the store.
func (d *drill) verify(ctx context.Context) error {
	work, arms, retries := d.feed.sent()
	d.rep.Published, d.rep.PublishRetries = 0, retries
	for _, n := range work {
		d.rep.Published += n
	}
	for _, n := range arms {
		d.rep.Arms += n
	}
	deadline := time.Now().Add(d.plan.Settle)
	var lag string
	for {
		var err error
		if lag, err = d.converged(ctx, work); err == nil && lag == "" {
			break
		}
		if time.Now().After(deadline) {
			d.rep.NotConverged = lag
			break
		}
		sleep(ctx, 500*time.Millisecond)
	}
	merged, err := d.ledgers.Merge(filepath.Join(d.env.Dir, "merged.db"))
	if err != nil {
		return err
	}
	t, err := merged.Tally()
	merged.Close()
	if err != nil {
		return err
	}
	d.rep.Doubled, d.rep.Replayed, d.rep.EarlyTimers, d.rep.EarliestBy = t.Doubled, t.Replayed, t.Early, t.EarliestBy
	for exe, sent := range work {
		applied := t.Work[exe]
		if applied < sent {
			d.rep.Lost += sent - applied
		}
		n, err := d.counted(ctx, exe)
		if err != nil {
			return err
		}
		switch {
		case n > sent:
			d.rep.DoubledBeyondKey += n - sent
		case n < sent && applied >= sent:
			d.rep.Lost += sent - n // recorded but not committed
		}
	}
	for exe, armed := range t.Armed {
		d.rep.TimersArmed += armed
		d.rep.TimersFired += t.Fired[exe]
		if fired := t.Fired[exe]; fired != armed {
			d.rep.TimerMismatch += max(armed-fired, fired-armed)
		}
	}
	d.rep.StuckOutbox, err = d.count(ctx, "stead_outbox")
	if err != nil {
		return err
	}
	d.rep.StuckTimers, err = d.count(ctx, "stead_timers")
	if err != nil {
		return err
	}
	d.rep.StuckMessages, err = d.count(ctx, "transport_messages")
	return err
}

// converged returns "" when every execution applied what was published to it and is back in its
// working state with no timer, and nothing waits in the outbox or the queue; else what lags.
func (d *drill) converged(ctx context.Context, work map[string]int) (string, error) {
	for exe, sent := range work {
		n, err := d.counted(ctx, exe)
		if err != nil {
			return "", err
		}
		if n < sent {
			return fmt.Sprintf("%s applied %d of %d work events", exe, n, sent), nil
		}
	}
	for _, table := range []string{"stead_outbox", "stead_timers", "transport_messages"} {
		n, err := d.count(ctx, table)
		if err != nil {
			return "", err
		}
		if n > 0 {
			return fmt.Sprintf("%d rows left in %s", n, table), nil
		}
	}
	return "", nil
}

// counted returns the work events exe counted in its context.
func (d *drill) counted(ctx context.Context, exe string) (int, error) {
	e, err := d.store.Load(ctx, exe)
	if err != nil {
		return 0, err
	}
	var c struct{ N float64 }
	if len(e.Context) > 0 {
		if err := json.Unmarshal(e.Context, &c); err != nil {
			return 0, err
		}
	}
	return int(c.N), nil
}

func (d *drill) count(ctx context.Context, table string) (int, error) {
	var n int
	err := d.pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, table}.Sanitize()).Scan(&n)
	return n, err
}

func sleep(ctx context.Context, dur time.Duration) {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
