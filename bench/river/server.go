package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// serverMeter reads what the cluster's server did between two points: the WAL it wrote and the
// CPU time its processes used.
type serverMeter struct {
	url string
	pid int // the postmaster's
}

// newServerMeter finds the postmaster of the cluster whose data directory is dataDir.
func newServerMeter(url, dataDir string) (*serverMeter, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return nil, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return nil, fmt.Errorf("postmaster.pid: %w", err)
	}
	return &serverMeter{url: url, pid: pid}, nil
}

// mark is one reading.
type mark struct {
	lsn string
	cpu time.Duration
	at  time.Time
}

func (m *serverMeter) mark(ctx context.Context) (mark, error) {
	conn, err := pgx.Connect(ctx, m.url)
	if err != nil {
		return mark{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var lsn string
	if err := conn.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		return mark{}, err
	}
	return mark{lsn: lsn, cpu: m.serverCPU(), at: time.Now()}, nil
}

// walBytes is the WAL written from a to b.
func (m *serverMeter) walBytes(ctx context.Context, a, b mark) (float64, error) {
	conn, err := pgx.Connect(ctx, m.url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n float64
	err = conn.QueryRow(ctx, "SELECT pg_wal_lsn_diff($1::text::pg_lsn, $2::text::pg_lsn)::float8", b.lsn, a.lsn).Scan(&n)
	return n, err
}

// clockTick is the kernel's USER_HZ, the unit of /proc/<pid>/stat's times (100 on Linux on
// every architecture Go supports).
const clockTick = 100

// serverCPU is the user and system CPU time of the postmaster, of its live children (backends,
// walwriter, checkpointer, autovacuum…) and of the children it already reaped (which the kernel
// adds to the postmaster's cutime and cstime), so a backend that exits between two marks still
// counts.
func (m *serverMeter) serverCPU() time.Duration {
	var ticks int64
	own := statFields(m.pid)
	if len(own) > 16 {
		for _, i := range []int{13, 14, 15, 16} {
			n, _ := strconv.ParseInt(own[i], 10, 64)
			ticks += n
		}
	}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == m.pid {
			continue
		}
		f := statFields(pid)
		if len(f) < 15 || f[3] != strconv.Itoa(m.pid) {
			continue
		}
		for _, i := range []int{13, 14} {
			n, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * time.Second / clockTick
}

// statFields splits /proc/<pid>/stat into its fields, numbered from 0 as in proc(5) minus one;
// the command name (field 1) may hold spaces and is taken as one field.
func statFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return nil
	}
	return append([]string{strings.TrimSpace(s[:open]), s[open+1 : end]}, strings.Fields(s[end+1:])...)
}

// loadAverage is the first field of /proc/loadavg.
func loadAverage() string {
	f, err := os.Open("/proc/loadavg")
	if err != nil {
		return "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if sc.Scan() {
		return strings.Join(strings.Fields(sc.Text())[:3], " ")
	}
	return "?"
}

// roundTrips counts the round trips a pool makes: every query and every batch (a pipeline)
// counts once. Begin and Commit are queries to pgx, so they count too.
type roundTrips struct{ n atomicInt }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// openPool opens a pool of at most maxConns connections on url, counting its round trips in rt
// (nil: not counted).
func openPool(ctx context.Context, url string, maxConns int32, rt *roundTrips) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	if rt != nil {
		cfg.ConnConfig.Tracer = rt
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// children returns the pids of the postmaster's children now.
func (m *serverMeter) children() []string {
	var out []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == m.pid {
			continue
		}
		if f := statFields(pid); len(f) > 3 && f[3] == strconv.Itoa(m.pid) {
			out = append(out, d.Name())
		}
	}
	return out
}
