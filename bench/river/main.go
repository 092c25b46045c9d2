// Command river is stead's speed harness against a peer: River's insert-then-work burn-down and
// stead's drain of the same number of events, in alternating rounds on one throwaway PostgreSQL
// cluster of stock settings, with pgbench ceilings (the single-row UPDATE and the least
// one-event step), stead unbatched and the curve of 1, 2, 4 and 8 worker processes in the same
// run. It writes a Markdown report (default bench/results/speed.md, relative to the repository)
// and prints the command that made it.
//
// It is a module of its own so that River stays out of stead's go.mod:
//
//	cd bench/river && go run . [-events 100000] [-rounds 3]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/steadhq/stead/internal/benchutil"
	"github.com/steadhq/stead/internal/chaos"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		err = workerMain(ctx, os.Args[2:])
	} else {
		err = run(ctx, os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "river bench:", err)
		os.Exit(1)
	}
}

// measure is what one round measured.
type measure struct {
	units    int // jobs or events processed
	elapsed  time.Duration
	wal      float64       // bytes of WAL
	cpu      time.Duration // the server's CPU time
	trips    int64         // round trips (-1: not counted)
	loadAvg  string
	partial  bool
	clientCP time.Duration // the benchmark process's own CPU time
}

func (m measure) rate() float64 { return float64(m.units) / m.elapsed.Seconds() }
func (m measure) perUnit(x float64) float64 {
	if m.units == 0 {
		return 0
	}
	return x / float64(m.units)
}

// harness is the server and the limits every round shares.
type harness struct {
	url   string
	meter *serverMeter
	limit time.Duration
	// functions prints, after each stead round, the time the server spent in each of stead's
	// functions (track_functions = all): where a round's server CPU went.
	functions bool
	// perf, when set, is the file of a perf profile of the server during the shared-transaction
	// rounds.
	perf string
	// cpuProfile, when set, is the file of a Go CPU profile of this process during the batched
	// shared-transaction rounds (the worker's own cost).
	cpuProfile string
}

type start struct {
	mark  mark
	trips int64
	cpu   time.Duration
}

func (h *harness) begin(ctx context.Context, rt *roundTrips) (start, error) {
	mk, err := h.meter.mark(ctx)
	if err != nil {
		return start{}, err
	}
	s := start{mark: mk, trips: -1, cpu: benchutil.CPUTime()}
	if rt != nil {
		s.trips = rt.n.load()
	}
	return s, nil
}

func (h *harness) end(ctx context.Context, s start, units int, rt *roundTrips) (measure, error) {
	var trips int64 = -1
	if rt != nil {
		trips = rt.n.load() - s.trips
	}
	client := benchutil.CPUTime() - s.cpu
	mk, err := h.meter.mark(ctx)
	if err != nil {
		return measure{}, err
	}
	wal, err := h.meter.walBytes(ctx, s.mark, mk)
	if err != nil {
		return measure{}, err
	}
	return measure{units: units, elapsed: mk.at.Sub(s.mark.at), wal: wal, cpu: mk.cpu - s.mark.cpu,
		trips: trips, loadAvg: loadAverage(), clientCP: client}, nil
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("river", flag.ContinueOnError)
	events := fs.Int("events", 100000, "events (stead) and jobs (River) per round")
	eventsPer := fs.Int("events-per", 10, "events per stead execution (a start and ticks)")
	rounds := fs.Int("rounds", 3, "alternating rounds of River and stead")
	riverWorkers := fs.Int("river-workers", 2000, "River's MaxWorkers on the default queue")
	unbatchedEvents := fs.Int("unbatched-events", 20000, "events of the unbatched rows")
	procEvents := fs.Int("process-events", 100000, "events of each point of the worker-process curve")
	procList := fs.String("processes", "1,2,4,8", "worker-process counts of the curve")
	pgbenchFor := fs.Duration("pgbench-time", 10*time.Second, "how long pgbench runs (0 skips it)")
	limit := fs.Duration("limit", 5*time.Minute, "cut a round after this long")
	functions := fs.Bool("functions", false, "print the server time of each stead function after each stead round")
	perfOut := fs.String("perf", "", "record a perf profile of the server during each shared-transaction round into this file")
	loops := fs.Int("loops", 0, "claim loops of the batched stead rounds (0: the worker's default)")
	batch := fs.Int("batch", 0, "batch size of the batched stead rounds (0: the worker's default)")
	backlog := fs.Int("backlog", 1000000, "events of the large backlog of the flat-cost and memory phase (0 skips it)")
	backlogWindow := fs.Duration("backlog-window", 15*time.Second, "how long the worker process drains the large backlog")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the batched shared-transaction rounds to this file")
	curveBoth := fs.Bool("curve-separate", true, "also run the curve with separate transactions")
	pinned := fs.Bool("pinned", runtime.NumCPU() >= 2, "also run the curves with the server on CPU 0 and the worker processes on the other CPUs (taskset)")
	out := fs.String("out", "", "report file (default: bench/results/speed.md of the repository)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *unbatchedEvents < *eventsPer || *procEvents < *eventsPer || *events < *eventsPer {
		return fmt.Errorf("every event count must be at least -events-per")
	}
	if *events%*eventsPer != 0 || *unbatchedEvents%*eventsPer != 0 || *procEvents%*eventsPer != 0 {
		return fmt.Errorf("event counts must be multiples of -events-per")
	}
	var procs []int
	for _, f := range strings.Split(*procList, ",") {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(f), &n); err != nil || n < 1 {
			return fmt.Errorf("-processes %q: want positive integers separated by commas", *procList)
		}
		procs = append(procs, n)
	}
	if *out == "" {
		wd, _ := os.Getwd()
		*out = filepath.Join(wd, "..", "results", "speed.md")
	}
	command := "cd bench/river && go run . " + strings.Join(args, " ")

	dir, err := os.MkdirTemp("", "stead-speed")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cluster, err := chaos.StartStockCluster(ctx, filepath.Join(dir, "pg"))
	if err != nil {
		return err
	}
	defer cluster.Stop()
	meter, err := newServerMeter(cluster.URL(), filepath.Join(dir, "pg", "data"))
	if err != nil {
		return err
	}
	h := &harness{url: cluster.URL(), meter: meter, limit: *limit, functions: *functions, perf: *perfOut, cpuProfile: *cpuProfile}
	rep := &report{command: command, started: time.Now(), loadStart: loadAverage()}
	say := func(format string, a ...any) {
		fmt.Printf(format+"\n", a...)
	}
	say("cluster %s (stock settings, fsync on, autovacuum on); load %s", h.url, rep.loadStart)

	execs := *events / *eventsPer
	batched := []workerMode{
		{name: "stead, worker defaults, separate transactions", loops: *loops, batch: *batch},
		{name: "stead, worker defaults, shared transaction", loops: *loops, batch: *batch, shared: true},
		// What the chains (GroupDepth) add, shown apart: the same with one event a commit.
		{name: "stead, worker defaults, shared transaction, GroupDepth 1", loops: *loops, batch: *batch, shared: true, depth: 1},
	}
	if *loops != 0 || *batch != 0 {
		for i := range batched {
			batched[i].name = strings.Replace(batched[i].name, "worker defaults",
				fmt.Sprintf("%d loops × batches of %d", batched[i].loopsOrDefault(), batched[i].batchOrDefault()), 1)
		}
	}
	rep.batchedModes = batched
	for r := 1; r <= *rounds; r++ {
		m, err := riverRound(ctx, h, *events, *riverWorkers)
		if err != nil {
			return fmt.Errorf("river round %d: %w", r, err)
		}
		rep.river = append(rep.river, m)
		say("round %d  River burn-down        %s", r, m.line("jobs"))
		row := make([]measure, len(batched))
		for i, mode := range batched {
			m, err := steadRound(ctx, h, mode, execs, *eventsPer)
			if err != nil {
				return fmt.Errorf("stead round %d (%s): %w", r, mode.name, err)
			}
			row[i] = m
			say("round %d  %s  %s", r, mode.name, m.line("events"))
		}
		rep.stead = append(rep.stead, row)
	}

	// The ceilings run just before the unbatched rows they are compared with: on this machine the
	// rate of the same statement drifts within minutes.
	if *pgbenchFor > 0 {
		for _, c := range ceilings {
			res, err := runCeiling(ctx, h, c, 8, *events, *pgbenchFor)
			if err != nil {
				return fmt.Errorf("pgbench: %w", err)
			}
			rep.ceilings = append(rep.ceilings, res)
			say("pgbench, %s, 8 clients: %.0f tps  %s", c.name, res.tps, res.m.line("transactions"))
		}
	}
	unbatched := []workerMode{
		{name: "stead unbatched, 8 loops, separate transactions", loops: 8, batch: 1},
		{name: "stead unbatched, 8 loops, shared transaction", loops: 8, batch: 1, shared: true},
	}
	for _, mode := range unbatched {
		m, err := steadRound(ctx, h, mode, *unbatchedEvents / *eventsPer, *eventsPer)
		if err != nil {
			return fmt.Errorf("%s: %w", mode.name, err)
		}
		rep.unbatched = append(rep.unbatched, named{mode.name, m})
		say("%s  %s", mode.name, m.line("events"))
	}

	curveModes := []workerMode{
		{name: "worker defaults, shared transaction", shared: true},
		{name: "worker defaults, separate transactions"},
	}
	if !*curveBoth {
		curveModes = curveModes[:1]
	}
	placements := []placement{{}}
	if *pinned {
		if _, err := exec.LookPath("taskset"); err != nil {
			return fmt.Errorf("-pinned needs taskset (util-linux): %w", err)
		}
		last := runtime.NumCPU() - 1
		placements = append(placements, placement{server: "0", workers: fmt.Sprintf("1-%d", last),
			all: fmt.Sprintf("0-%d", last)})
	}
	for _, pl := range placements {
		if pl.server != "" {
			if err := pinServer(ctx, h, pl.server); err != nil {
				return err
			}
		}
		for _, mode := range curveModes {
			c := curve{mode: mode.name, placement: pl}
			for _, n := range procs {
				m, err := processesRound(ctx, h, mode, n, *procEvents / *eventsPer, *eventsPer, pl.workers)
				if err != nil {
					return fmt.Errorf("%d worker processes: %w", n, err)
				}
				c.points = append(c.points, point{n, m})
				say("%d worker processes (%s%s)  %s", n, mode.name, pl.label(), m.line("events"))
			}
			rep.curves = append(rep.curves, c)
		}
		if pl.server != "" {
			if err := pinServer(ctx, h, pl.all); err != nil {
				return err
			}
		}
	}
	if *backlog > 0 {
		say("backlog phase: seeding %d events", *backlog)
		b, err := backlogRound(ctx, h, *backlog, *eventsPer, *backlogWindow)
		if err != nil {
			return fmt.Errorf("backlog phase: %w", err)
		}
		rep.backlog = &b
		for _, c := range []costs{b.small, b.big} {
			say("backlog %8d events: claim of 64 %v, load %v (warm %v, %v), list page %v, list page by status %v", c.events,
				c.claim, c.load, c.claimWarm, c.loadWarm, c.list, c.listStatus)
		}
		say("worker process on the %d-event backlog: peak RSS %d kB, %d kB at the end, %d events in %v",
			*backlog, b.rssPeak, b.rssEnd, b.drained, b.window.Round(time.Millisecond))
	}
	rep.loadEnd = loadAverage()
	rep.events = *events
	rep.riverWorkers = *riverWorkers
	if err := os.WriteFile(*out, []byte(rep.markdown()), 0o644); err != nil {
		return err
	}
	say("wrote %s\ncommand: %s", *out, command)
	return nil
}
