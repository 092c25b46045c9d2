package chaos_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/steadhq/stead/internal/chaos"
	"github.com/steadhq/stead/pgdb/pgdbtest"
)

// TestMain runs the drills, or one drill worker when the environment names one.
func TestMain(m *testing.M) {
	if cfg, ok := chaos.WorkerFromEnv(); ok {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		if err := chaos.RunWorker(ctx, cfg); err != nil {
			cfg.Logger.Error("worker failed", slog.Any("err", err))
			os.Exit(1)
		}
		os.Exit(0)
	}
	if cfg, ok := chaos.RunnerFromEnv(); ok {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		if err := chaos.RunRunner(ctx, cfg); err != nil {
			cfg.Logger.Error("runner failed", slog.Any("err", err))
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestScheduleKill runs the schedule drill: runner processes SIGKILLed at random, and killing
// themselves between creating a round's executions and claiming its ticks, while 20 schedules
// tick every second; it fails on a tick lost, an execution off the timetable, or one created
// before its runner died and gone after.
func TestScheduleKill(t *testing.T) {
	if testing.Short() {
		t.Skip("the schedule drill takes about 20 seconds; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := chaos.RunSchedules(ctx, chaos.ShortSchedules(), chaos.Env{Dir: t.TempDir(), Exe: os.Args[0], Logf: t.Logf})
	if errors.Is(err, chaos.ErrNoPostgres) {
		if pgdbtest.Required() {
			t.Fatalf("PostgreSQL is required (STEAD_REQUIRE_POSTGRES=1): %v", err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		t.Error(p)
	}
	if rep.Killed == 0 || rep.SelfKill == 0 || rep.Marked == 0 {
		t.Errorf("the drill made too few faults: %d killed, %d killed themselves, %d marked", rep.Killed, rep.SelfKill, rep.Marked)
	}
}

// TestChaos runs the short drill, or the long one with STEAD_CHAOS=long, and fails on anything
// lost, doubled, stuck or early, and on a restart after which the workers took more than a third
// of their lease to step again (they must not wait for leases to end).
func TestChaos(t *testing.T) {
	plan := chaos.Short()
	if os.Getenv("STEAD_CHAOS") == "long" {
		plan = chaos.Long()
	} else if testing.Short() {
		t.Skip("the chaos drill takes about a minute; -short skips it")
	}
	drill(t, plan)
}

// TestFailover runs the short failover drill (a primary and a synchronous standby: a clean
// failover and the fail back, a black-holed primary, a worker partitioned past its lease), or
// the long one with STEAD_CHAOS=long, and fails on anything lost, doubled, stuck or early, and on
// a promotion after which the workers took longer than chaos.FailoverWithin to step again.
func TestFailover(t *testing.T) {
	plan := chaos.ShortFailover()
	if os.Getenv("STEAD_CHAOS") == "long" {
		plan = chaos.LongFailover()
	} else if testing.Short() {
		t.Skip("the failover drill takes about a minute; -short skips it")
	}
	drill(t, plan)
}

func drill(t *testing.T, plan chaos.Plan) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	rep, err := chaos.Run(ctx, plan, chaos.Env{Dir: dir, Exe: os.Args[0], Logf: t.Logf})
	if errors.Is(err, chaos.ErrNoPostgres) {
		if pgdbtest.Required() {
			t.Fatalf("PostgreSQL is required (STEAD_REQUIRE_POSTGRES=1): %v", err)
		}
		t.Skip(err)
	}
	if rep != nil {
		t.Logf("report:\n%s", rep.Markdown())
		if out := os.Getenv("STEAD_CHAOS_REPORT"); out != "" {
			if plan.Failovers+plan.BlackHoles+plan.Partitions > 0 {
				out += ".failover"
			}
			if werr := os.WriteFile(out, []byte(rep.Markdown()), 0o644); werr != nil {
				t.Error(werr)
			}
		}
	}
	if err != nil {
		if b, rerr := os.ReadFile(dir + "/workers.log"); rerr == nil && len(b) > 0 {
			t.Logf("workers' log (tail):\n%s", tail(b, 4000))
		}
		t.Fatal(err)
	}
	for _, p := range rep.Problems(plan.Visibility / 3) {
		t.Error(p)
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
