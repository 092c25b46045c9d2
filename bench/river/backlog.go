package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/worker/pgtx"
)

// costs are the median times of the hot path's reads on one backlog.
type costs struct {
	events      int // the backlog, in events
	executions  int
	claim, load time.Duration // a shared transaction's claim of a batch of 64 with its load, and the load alone
	// The same probes again from a fresh transport, whose claims start from the head of the
	// round-robin and so take the groups the first pass took: their pages are in the server's
	// cache now, which isolates what the backlog's size costs from what a first touch of a page
	// outside shared_buffers costs.
	claimWarm, loadWarm time.Duration
	list                time.Duration // a page of 100 executions, unfiltered
	listStatus          time.Duration // a page of 100 running executions
	// bytes is the size of the schema's tables with their indexes, against the server's
	// shared_buffers (sharedBuffers, bytes).
	bytes, sharedBuffers int64
}

// backlogResult is what the backlog phase measured: the costs at a small and a large backlog,
// and a worker process's memory and rate while it drains the large one.
type backlogResult struct {
	small, big costs
	rssPeak    int64 // kB, VmHWM of the worker process
	rssEnd     int64 // kB, VmRSS when it stopped
	drained    int   // events it processed in the window
	window     time.Duration
}

// probeCosts seeds executions×eventsPer events in a fresh schema and times, n times each, what
// a worker does at every batch against that backlog (claim and load, in a transaction that is
// rolled back) and a listing page. The schema is kept for the caller when keep is set.
func probeCosts(ctx context.Context, h *harness, executions, eventsPer, n int, keep bool) (costs, string, error) {
	schema := newSchema()
	if !keep {
		defer dropSchema(context.WithoutCancel(ctx), h.url, schema)
	}
	s, err := openStead(ctx, h.url, schema, 4, nil)
	if err != nil {
		return costs{}, schema, err
	}
	defer s.close()
	if err := seed(ctx, s, executions, eventsPer); err != nil {
		return costs{}, schema, fmt.Errorf("seed: %w", err)
	}
	// What a worker meets after a while: statistics gathered, the loading's dead tuples gone.
	for _, t := range []string{"stead_executions", "transport_messages", "transport_groups"} {
		if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE "+pgx.Identifier{schema, t}.Sanitize()); err != nil {
			return costs{}, schema, err
		}
	}
	var size, buffers int64
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT sum(pg_total_relation_size(c.oid))::bigint FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'),
		(SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers')`, schema).Scan(&size, &buffers); err != nil {
		return costs{}, schema, err
	}
	claims, loads, lists, listsStatus, err := probe(ctx, s, n, true)
	if err != nil {
		return costs{}, schema, err
	}
	again, err := openStead(ctx, h.url, schema, 4, nil)
	if err != nil {
		return costs{}, schema, err
	}
	defer again.close()
	claimsWarm, loadsWarm, _, _, err := probe(ctx, again, n, false)
	if err != nil {
		return costs{}, schema, err
	}
	return costs{events: executions * eventsPer, executions: executions, claim: median(claims), load: median(loads),
		claimWarm: median(claimsWarm), loadWarm: median(loadsWarm),
		list: median(lists), listStatus: median(listsStatus), bytes: size, sharedBuffers: buffers}, schema, nil
}

// probe runs n probes on s: a shared transaction's claim of 64 (which loads their executions in
// its round trip), rolled back, the load of those executions alone, and (with lists) the two listing pages; it returns each probe's times.
func probe(ctx context.Context, s *steadSetup, n int, lists bool) (claims, loads, pages, pagesStatus []time.Duration, err error) {
	db, err := pgtx.New(s.store, s.tr)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	for range n {
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		tx, err := db.Begin(tctx)
		if err != nil {
			cancel()
			return nil, nil, nil, nil, err
		}
		t0 := time.Now()
		ls, _, err := tx.Claim(tctx, "probe", 30*time.Second, 0, 64, 1) // loads what it claims, in its round trip
		t1 := time.Now()
		if err == nil && len(ls) > 0 {
			// The load alone, as the claim's statement sends it, on another connection.
			_, err = s.store.LoadForEvents(tctx, refsOf(ls))
		}
		t2 := time.Now()
		_ = tx.Rollback(context.WithoutCancel(ctx))
		cancel()
		if err != nil {
			return nil, nil, nil, nil, err
		}
		claims, loads = append(claims, t1.Sub(t0)), append(loads, t2.Sub(t1))
		if !lists {
			continue
		}
		t0 = time.Now()
		if _, err := s.store.List(ctx, stead.ListFilter{Limit: 100}); err != nil {
			return nil, nil, nil, nil, err
		}
		t1 = time.Now()
		if _, err := s.store.List(ctx, stead.ListFilter{Limit: 100, Statuses: []stead.Status{stead.StatusPending}}); err != nil {
			return nil, nil, nil, nil, err
		}
		pages, pagesStatus = append(pages, t1.Sub(t0)), append(pagesStatus, time.Since(t1))
	}
	return claims, loads, pages, pagesStatus, nil
}

func refsOf(ls []transport.Lease) []stead.EventRef {
	refs := make([]stead.EventRef, len(ls))
	for i, l := range ls {
		refs[i] = stead.EventRef{ExecutionID: l.Group, EventID: l.Event.ID}
	}
	return refs
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// backlogRound compares the costs at a backlog of 1,000 events and at big, then lets one worker
// process (at the worker's defaults, shared transaction) drain the big backlog for window and
// reads its memory from /proc.
func backlogRound(ctx context.Context, h *harness, big, eventsPer int, window time.Duration) (backlogResult, error) {
	var res backlogResult
	var err error
	if res.small, _, err = probeCosts(ctx, h, 1000/eventsPer, eventsPer, 200, false); err != nil {
		return res, err
	}
	var schema string
	res.big, schema, err = probeCosts(ctx, h, big/eventsPer, eventsPer, 200, true)
	defer dropSchema(context.WithoutCancel(ctx), h.url, schema)
	if err != nil {
		return res, err
	}
	self, err := os.Executable()
	if err != nil {
		return res, err
	}
	cmd := exec.CommandContext(ctx, self, "worker", "-url", h.url, "-schema", schema,
		"-last", strconv.Itoa(eventsPer-1), "-shared=true", "-name", "backlog")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return res, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return res, err
	}
	if err := cmd.Start(); err != nil {
		return res, err
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		return res, fmt.Errorf("backlog worker did not start: %q %v", line, err)
	}
	conn, err := pgx.Connect(ctx, h.url)
	if err != nil {
		return res, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	q := "SELECT count(*) FROM " + pgx.Identifier{schema, "transport_messages"}.Sanitize()
	var before, after int
	if err := conn.QueryRow(ctx, q).Scan(&before); err != nil {
		return res, err
	}
	start := time.Now()
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		return res, err
	}
	pid := cmd.Process.Pid
	for time.Since(start) < window {
		time.Sleep(200 * time.Millisecond)
		res.rssPeak = max(res.rssPeak, procStatus(pid, "VmHWM"))
	}
	res.rssEnd = procStatus(pid, "VmRSS")
	res.window = time.Since(start)
	if err := conn.QueryRow(ctx, q).Scan(&after); err != nil {
		return res, err
	}
	res.drained = before - after
	return res, nil
}

// procStatus reads a kB field of /proc/<pid>/status (0 when it cannot).
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
