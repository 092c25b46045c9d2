package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/schedule"
	"github.com/steadhq/stead/schedule/schedworker"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/worker"
)

// The schedule drill: runner processes fire schedules that tick every second while the drill
// SIGKILLs them at random, and while each kills itself, now and then, right after it created a
// round's executions and before it claimed their ticks — the one moment a tick is started but
// not yet fenced. Then it checks every schedule's ticks: each one in the drill's span has exactly
// one execution, and nothing else was started.

// The environment that makes the chaos test binary run one schedule runner.
const (
	envRunnerURL    = "STEAD_CHAOS_RUNNER_URL"
	envRunnerSchema = "STEAD_CHAOS_RUNNER_SCHEMA"
	envRunnerDie    = "STEAD_CHAOS_RUNNER_DIE"
	envRunnerMarks  = "STEAD_CHAOS_RUNNER_MARKS"
)

// RunnerConfig is one runner process of the schedule drill.
type RunnerConfig struct {
	URL, Schema string
	// Die is the chance that the runner kills itself (SIGKILL) after a round's executions were
	// created and before their ticks were claimed.
	Die float64
	// Marks is the file where a runner about to kill itself appends the ids it created.
	Marks  string
	Logger *slog.Logger
}

// RunnerFromEnv returns the runner configuration the environment names, and whether it names one.
func RunnerFromEnv() (RunnerConfig, bool) {
	url := os.Getenv(envRunnerURL)
	if url == "" {
		return RunnerConfig{}, false
	}
	die, _ := strconv.ParseFloat(os.Getenv(envRunnerDie), 64)
	return RunnerConfig{URL: url, Schema: os.Getenv(envRunnerSchema), Die: die, Marks: os.Getenv(envRunnerMarks)}, true
}

// dying starts a round's executions, then, by chance, marks them and kills its own process
// before the runner can claim their ticks.
type dying struct {
	schedworker.Starter
	die   float64
	marks string
}

func (d dying) StartBatch(ctx context.Context, starts []schedule.Start) ([]bool, error) {
	exist, err := d.Starter.StartBatch(ctx, starts)
	if err == nil && rand.Float64() < d.die {
		f, ferr := os.OpenFile(d.marks, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if ferr == nil {
			for _, s := range starts {
				fmt.Fprintln(f, s.ID)
			}
			_ = f.Sync()
			_ = f.Close()
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	return exist, err
}

// RunRunner runs one schedule runner until ctx is done.
func RunRunner(ctx context.Context, c RunnerConfig) error {
	pool, err := pgdb.Open(ctx, c.URL, pgdb.Config{MaxConns: 8, ConnectAttempts: 120, ConnectDelay: 250 * time.Millisecond})
	if err != nil {
		return err
	}
	defer pool.Close()
	store, err := pgstore.New(ctx, pool, pgstore.WithSchema(c.Schema))
	if err != nil {
		return err
	}
	defer store.Close()
	tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema(c.Schema), pgtransport.WithoutListen())
	if err != nil {
		return err
	}
	defer tr.Close()
	schedules, err := schedule.For(store)
	if err != nil {
		return err
	}
	client := &worker.Client{Store: store, Transport: tr, Logger: c.Logger}
	r := schedworker.Runner(schedules, client)
	r.Starter = dying{Starter: schedworker.Starter{Client: client}, die: c.Die, marks: c.Marks}
	r.Poll = 200 * time.Millisecond
	r.Logger = c.Logger
	// Run returns only once it stops, always with an error: ctx's, or its wait's.
	if err := r.Run(ctx); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// SchedulePlan is what the schedule drill does.
type SchedulePlan struct {
	Schedules int           // schedules ticking every second
	Runners   int           // runner processes
	For       time.Duration // how long they run under faults
	KillEvery time.Duration // how often the drill SIGKILLs a runner
	Die       float64       // each round's chance that its runner kills itself before claiming
}

// ShortSchedules is the drill ./test.sh runs.
func ShortSchedules() SchedulePlan {
	return SchedulePlan{Schedules: 20, Runners: 3, For: 12 * time.Second, KillEvery: 1500 * time.Millisecond, Die: 0.1}
}

// ScheduleReport is what the schedule drill saw.
type ScheduleReport struct {
	Plan             SchedulePlan
	Ticks            int // ticks in the checked span, over every schedule
	Executions       int // executions the schedules started
	Killed, SelfKill int // runners the drill killed, runners that killed themselves
	Marked           int // executions created by a runner that died before claiming their tick
	Problems         []string
}

// RunSchedules runs the schedule drill on a cluster of its own.
func RunSchedules(ctx context.Context, plan SchedulePlan, env Env) (*ScheduleReport, error) {
	if env.Logf == nil {
		env.Logf = func(string, ...any) {}
	}
	rep := &ScheduleReport{Plan: plan}
	cluster, err := StartCluster(ctx, filepath.Join(env.Dir, "pg"))
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := cluster.Stop(); err != nil {
			env.Logf("%v", err)
		}
	}()
	pool, err := pgdb.Open(ctx, cluster.URL(), pgdb.Config{MaxConns: 4})
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	store, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
	if err != nil {
		return nil, err
	}
	defer store.Close()
	if _, err := pgtransport.New(ctx, pool, pgtransport.WithSchema(schema), pgtransport.WithoutListen()); err != nil {
		return nil, err
	}
	schedules, err := schedule.For(store)
	if err != nil {
		return nil, err
	}
	ids := make([]string, plan.Schedules)
	for i := range ids {
		ids[i] = fmt.Sprintf("s%03d", i)
		if _, err := schedules.Create(ctx, schedule.Schedule{ID: ids[i], DefinitionID: "tick", Every: time.Second,
			Overlap: schedule.AllowAll, CatchUp: schedule.All, CatchUpWindow: time.Hour}); err != nil {
			return nil, err
		}
	}
	// The span checked: from the first tick every schedule has to the last tick before the end.
	first := time.Now().UTC().Truncate(time.Second).Add(time.Second)
	marks := filepath.Join(env.Dir, "marks")
	var (
		mu    sync.Mutex
		procs = make([]*process, plan.Runners)
	)
	start := func(k int) error {
		p, err := startRunner(env.Exe, RunnerConfig{URL: cluster.URL(), Schema: schema, Die: plan.Die, Marks: marks},
			filepath.Join(env.Dir, fmt.Sprintf("runner%d.log", k)))
		if err == nil {
			mu.Lock()
			procs[k] = p
			mu.Unlock()
		}
		return err
	}
	for k := range procs {
		if err := start(k); err != nil {
			return nil, err
		}
	}
	end := time.Now().Add(plan.For)
	nextKill := time.Now().Add(plan.KillEvery)
	for time.Now().Before(end) && ctx.Err() == nil {
		for k, p := range procs {
			select {
			case <-p.done: // it killed itself
				rep.SelfKill++
				if err := start(k); err != nil {
					return rep, err
				}
			default:
			}
		}
		if time.Now().After(nextKill) {
			k := rand.IntN(len(procs))
			procs[k].kill()
			rep.Killed++
			if err := start(k); err != nil {
				return rep, err
			}
			nextKill = time.Now().Add(plan.KillEvery)
		}
		time.Sleep(50 * time.Millisecond)
	}
	last := time.Now().UTC().Truncate(time.Second)
	// One clean runner catches up on what the faults left due, then everything stops.
	catchUp := end.Add(10 * time.Second)
	for time.Now().Before(catchUp) {
		done := true
		for _, id := range ids {
			sc, err := schedules.Get(ctx, id)
			if err != nil {
				return rep, err
			}
			if !sc.NextTick.After(last) {
				done = false
			}
		}
		if done {
			break
		}
		for k, p := range procs {
			select {
			case <-p.done:
				if err := start(k); err != nil {
					return rep, err
				}
			default:
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, p := range procs {
		p.kill()
	}

	marked := map[string]bool{}
	if f, err := os.Open(marks); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			marked[sc.Text()] = true
		}
		f.Close()
	}
	rep.Marked = len(marked)
	for _, id := range ids {
		var got []string
		cursor := ""
		for {
			page, err := store.List(ctx, stead.ListFilter{IDPrefix: id + "@", Limit: stead.MaxListLimit, Cursor: cursor})
			if err != nil {
				return rep, err
			}
			for _, s := range page.Items {
				got = append(got, s.ID)
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		rep.Executions += len(got)
		var want []string
		for t := first; !t.After(last); t = t.Add(time.Second) {
			want = append(want, schedule.ExecutionID(id, t))
		}
		rep.Ticks += len(want)
		for _, w := range want {
			if !slices.Contains(got, w) {
				rep.Problems = append(rep.Problems, "tick lost: "+w)
			}
		}
		for _, g := range got {
			at, err := time.Parse(time.RFC3339Nano, g[strings.LastIndexByte(g, '@')+1:])
			if err != nil || at.Before(first.Add(-time.Second)) || at.After(last.Add(11*time.Second)) || at.Truncate(time.Second) != at {
				rep.Problems = append(rep.Problems, "execution off the timetable: "+g)
			}
		}
	}
	for id := range marked {
		if _, err := store.Load(ctx, id); err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("created before its runner died, then gone: %s (%v)", id, err))
		}
	}
	env.Logf("schedule drill: %d ticks checked over %d schedules, %d executions, %d runners killed, %d killed themselves before claiming (%d executions marked)",
		rep.Ticks, plan.Schedules, rep.Executions, rep.Killed, rep.SelfKill, rep.Marked)
	return rep, nil
}

// startRunner starts the program at exe (which calls RunnerFromEnv) as the runner cfg, its
// output appended to logPath.
func startRunner(exe string, cfg RunnerConfig, logPath string) (*process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envRunnerURL+"="+cfg.URL, envRunnerSchema+"="+cfg.Schema,
		envRunnerDie+"="+strconv.FormatFloat(cfg.Die, 'g', -1, 64), envRunnerMarks+"="+cfg.Marks)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("chaos: start runner: %w", err)
	}
	p := &process{cmd: cmd, done: make(chan error, 1)}
	go func() {
		p.done <- cmd.Wait()
		log.Close()
	}()
	return p, nil
}
