package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/steadhq/stead/internal/benchutil"
)

type named struct {
	name string
	m    measure
}

type curve struct {
	mode      string
	placement placement
	points    []point
}

// placement is where a curve's processes run: on every CPU (the zero placement), or the server
// on some CPUs and the worker processes on others (taskset CPU lists).
type placement struct {
	server, workers, all string
}

func (p placement) label() string {
	if p.server == "" {
		return ""
	}
	return fmt.Sprintf("; server on CPU %s, workers on CPU %s", p.server, p.workers)
}

type point struct {
	procs int
	m     measure
}

// report is everything one run measured.
type report struct {
	command            string
	started            time.Time
	loadStart, loadEnd string
	events             int
	riverWorkers       int
	ceilings           []ceilingResult // in the order of ceilings: the UPDATE first, the least durable step last
	river              []measure
	batchedModes       []workerMode
	stead              [][]measure // [round][mode]
	unbatched          []named
	curves             []curve
	backlog            *backlogResult
}

func (m measure) line(unit string) string {
	trips := "n/a"
	if m.trips >= 0 {
		trips = fmt.Sprintf("%.3f", m.perUnit(float64(m.trips)))
	}
	partial := ""
	if m.partial {
		partial = " (partial: cut by -limit)"
	}
	return fmt.Sprintf("%7d %s in %6.2fs = %7.0f/s  WAL %5.0f B  server CPU %6.1f µs  round trips %s  per unit; load %s%s",
		m.units, unit, m.elapsed.Seconds(), m.rate(), m.perUnit(m.wal), m.perUnit(float64(m.cpu.Microseconds())),
		trips, m.loadAvg, partial)
}

func (m measure) cells() string {
	trips := "n/a"
	if m.trips >= 0 {
		trips = fmt.Sprintf("%.3f", m.perUnit(float64(m.trips)))
	}
	partial := ""
	if m.partial {
		partial = " (partial)"
	}
	return fmt.Sprintf("%d%s | %.2f s | %.0f | %.0f | %.1f | %s | %.1f | %s", m.units, partial, m.elapsed.Seconds(), m.rate(),
		m.perUnit(m.wal), m.perUnit(float64(m.cpu.Microseconds())), trips,
		m.perUnit(float64(m.clientCP.Microseconds())), m.loadAvg)
}

func rates(ms []measure) []float64 {
	var r []float64
	for _, m := range ms {
		r = append(r, m.rate())
	}
	return r
}

func medianOf(ms []measure, f func(measure) float64) float64 {
	var xs []float64
	for _, m := range ms {
		xs = append(xs, f(m))
	}
	return benchutil.Median(xs)
}

func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# stead against River on one server\n\n")
	fmt.Fprintf(&b, "Run %s (UTC), load average %s at the start and %s at the end (2 cores shared with other work).\n\n",
		r.started.UTC().Format("2006-01-02 15:04"), r.loadStart, r.loadEnd)
	fmt.Fprintf(&b, "Command: `%s`\n\n", r.command)
	fmt.Fprintf(&b, "A throwaway PostgreSQL cluster (initdb, stock settings: fsync on, autovacuum on, default "+
		"shared_buffers; max_connections 200 for the worker processes) on this machine. River: %d jobs inserted, "+
		"then a client with MaxWorkers %d on the default queue and every other setting at River's default, on a pool "+
		"of the size stead's worker gets (%d connections, as `stead run` sizes it), timed from its start to the last completion it reports. stead: %d events (executions of 10: a start and nine "+
		"ticks) published, then one worker at the worker's default settings (8 loops, batches of 128; in the shared "+
		"transaction up to 16 queued events of one execution applied and committed together, GroupDepth, unless the row says 1), timed from its start to the last "+
		"commit. Rounds alternate River and stead. WAL from pg_current_wal_lsn before and after; server CPU from "+
		"/proc/<pid>/stat of the postmaster and its children (reaped ones included); round trips are the pool's "+
		"queries and batches (pgx tracer); client CPU is this process's.\n\n", r.events, r.riverWorkers, steadPoolSize(0), r.events)

	b.WriteString("## Rounds\n\n| round | what | units | elapsed | per s | WAL B/unit | server CPU µs/unit | round trips/unit | client CPU µs/unit | load |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for i := range r.river {
		fmt.Fprintf(&b, "| %d | River burn-down | %s |\n", i+1, r.river[i].cells())
		for j, mode := range r.batchedModes {
			fmt.Fprintf(&b, "| %d | %s | %s |\n", i+1, mode.name, r.stead[i][j].cells())
		}
	}
	b.WriteString("\n## Medians\n\n| what | per s | vs River | WAL B/unit | server CPU µs/unit | round trips/unit |\n|---|---:|---:|---:|---:|---:|\n")
	riverRate := benchutil.Median(rates(r.river))
	row := func(name string, ms []measure) {
		trips := medianOf(ms, func(m measure) float64 { return m.perUnit(float64(m.trips)) })
		fmt.Fprintf(&b, "| %s | %.0f | %.2f× | %.0f | %.1f | %.3f |\n", name, benchutil.Median(rates(ms)),
			benchutil.Median(rates(ms))/riverRate,
			medianOf(ms, func(m measure) float64 { return m.perUnit(m.wal) }),
			medianOf(ms, func(m measure) float64 { return m.perUnit(float64(m.cpu.Microseconds())) }), trips)
	}
	row("River burn-down", r.river)
	for j, mode := range r.batchedModes {
		var ms []measure
		for i := range r.stead {
			ms = append(ms, r.stead[i][j])
		}
		row(mode.name, ms)
	}

	b.WriteString("\n## Unbatched against pgbench\n\n")
	if len(r.ceilings) > 0 {
		fmt.Fprintf(&b, "pgbench at 8 clients, run just before the stead rows (simple protocol, %d rows; "+
			"the server CPU includes pgbench's connections):\n\n"+
			"| pgbench script | tps | vs single-row UPDATE | round trips | WAL B/transaction | server CPU µs/transaction |\n"+
			"|---|---:|---:|---:|---:|---:|\n", r.events)
		for _, c := range r.ceilings {
			fmt.Fprintf(&b, "| %s | %.0f | %.2f× | %d | %.0f | %.1f |\n", c.name, c.tps, c.tps/r.ceilings[0].tps, c.trips,
				c.m.perUnit(c.m.wal), c.m.perUnit(float64(c.m.cpu.Microseconds())))
		}
		b.WriteString("\n")
	}
	b.WriteString("| what | events | elapsed | events/s | vs single-row UPDATE | vs least durable step | WAL B/event | server CPU µs/event | round trips/event |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, u := range r.unbatched {
		vs, vsStep := "", ""
		if len(r.ceilings) > 0 {
			vs = fmt.Sprintf("%.2f×", u.m.rate()/r.ceilings[0].tps)
			vsStep = fmt.Sprintf("%.2f×", u.m.rate()/r.ceilings[len(r.ceilings)-1].tps)
		}
		fmt.Fprintf(&b, "| %s | %d | %.2f s | %.0f | %s | %s | %.0f | %.1f | %.3f |\n", u.name, u.m.units, u.m.elapsed.Seconds(),
			u.m.rate(), vs, vsStep, u.m.perUnit(u.m.wal), u.m.perUnit(float64(u.m.cpu.Microseconds())), u.m.perUnit(float64(u.m.trips)))
	}

	b.WriteString("\n## Worker processes on one server\n\nProcesses of this binary (`worker` mode), released together, " +
		"timed until every execution is done (polled every 50 ms). \"Server CPUs busy\" is the server's CPU time over the " +
		"elapsed time: the server is saturated when it reaches the CPUs it may use.\n")
	for _, c := range r.curves {
		fmt.Fprintf(&b, "\n%s%s:\n\n| processes | events | elapsed | events/s | vs 1 process | WAL B/event | server CPU µs/event | server CPUs busy | load |\n"+
			"|---:|---:|---:|---:|---:|---:|---:|---:|---|\n", c.mode, c.placement.label())
		for _, p := range c.points {
			vs := p.m.rate() / c.points[0].m.rate()
			fmt.Fprintf(&b, "| %d | %d | %.2f s | %.0f | %.2f× | %.0f | %.1f | %.2f | %s |\n", p.procs, p.m.units, p.m.elapsed.Seconds(),
				p.m.rate(), vs, p.m.perUnit(p.m.wal), p.m.perUnit(float64(p.m.cpu.Microseconds())),
				p.m.cpu.Seconds()/p.m.elapsed.Seconds(), p.m.loadAvg)
		}
	}
	if r.backlog != nil {
		bl := r.backlog
		fmt.Fprintf(&b, "\n## Flat costs and memory at a large backlog\n\n"+
			"Medians of 200 probes on each backlog (after VACUUM ANALYZE): a shared transaction's claim of 64 messages "+
			"with the load of their executions in its round trip (then rolled back), the load alone on another "+
			"connection, and a listing page of 100. Each claim resumes the "+
			"round-robin after the previous one, so on the large backlog every probe touches groups no earlier probe "+
			"touched: pages read for the first time, from outside shared_buffers once the tables outgrow it. The warm "+
			"columns repeat the 200 claims and loads from a fresh transport, which takes the same groups again, their "+
			"pages now cached: what is left is what the backlog's size costs the statements themselves.\n\n")
		b.WriteString("| backlog | executions | tables and indexes | claim of 64 with load | load of 64 alone | claim of 64 with load, warm | load of 64 alone, warm | list page | list page, status filter |\n" +
			"|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, c := range []costs{bl.small, bl.big} {
			us := func(d time.Duration) string { return fmt.Sprintf("%d µs", d.Microseconds()) }
			fmt.Fprintf(&b, "| %d | %d | %.1f MiB (shared_buffers %.0f MiB) | %s | %s | %s | %s | %s | %s |\n", c.events, c.executions,
				float64(c.bytes)/(1<<20), float64(c.sharedBuffers)/(1<<20), us(c.claim), us(c.load), us(c.claimWarm), us(c.loadWarm),
				us(c.list), us(c.listStatus))
		}
		ratio := func(a, b time.Duration) float64 { return float64(b) / float64(max(a, 1)) }
		fmt.Fprintf(&b, "| ratio | | | %.2f× | %.2f× | %.2f× | %.2f× | %.2f× | %.2f× |\n\n", ratio(bl.small.claim, bl.big.claim),
			ratio(bl.small.load, bl.big.load), ratio(bl.small.claimWarm, bl.big.claimWarm), ratio(bl.small.loadWarm, bl.big.loadWarm),
			ratio(bl.small.list, bl.big.list), ratio(bl.small.listStatus, bl.big.listStatus))
		fmt.Fprintf(&b, "One worker process (worker defaults, shared transaction) draining the %d-event backlog for %v: "+
			"peak RSS (VmHWM) **%.1f MiB**, %.1f MiB at the end; it processed %d events (%.0f/s).\n",
			bl.big.events, bl.window.Round(time.Second), float64(bl.rssPeak)/1024, float64(bl.rssEnd)/1024, bl.drained,
			float64(bl.drained)/bl.window.Seconds())
	}
	return b.String()
}
