package pgtx_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/worker"
	"github.com/steadhq/stead/worker/pgtx"
)

// roundTrips counts the round trips of a pool's connections: a write after the client last read
// something (or its first write) starts one, however many writes and reads it takes. pgx's pings
// and the prepares of its statement cache count too, as they cost the same.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: c, r: r}, nil
}

type countedConn struct {
	net.Conn
	r       *roundTrips
	waiting atomic.Bool // wrote since the last read
}

func (c *countedConn) Write(p []byte) (int, error) {
	if !c.waiting.Swap(true) {
		c.r.n.Add(1)
	}
	return c.Conn.Write(p)
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.waiting.Store(false)
	}
	return n, err
}

// countedSetup opens a store and a transport on one pool of conns connections whose round trips
// rt counts, in mode, with n executions e1..en at version 1. With one connection, no round trip
// hides on another.
func countedSetup(t *testing.T, mode pgx.QueryExecMode, conns int32, n int) (*pgtx.DB, *stead.Store, *transport.Transport, *roundTrips) {
	t.Helper()
	return countedSetupAt(t, pgdbtest.URL(), mode, conns, n)
}

// countedSetupAt is countedSetup on the server at url.
func countedSetupAt(t *testing.T, url string, mode pgx.QueryExecMode, conns int32, n int) (*pgtx.DB, *stead.Store, *transport.Transport, *roundTrips) {
	t.Helper()
	ctx := context.Background()
	schema := pgdbtest.Schema(t)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	rt := &roundTrips{}
	cfg.MaxConns = conns
	cfg.ConnConfig.DialFunc = rt.dial
	cfg.ConnConfig.DefaultQueryExecMode = mode
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db, s, tr := openShared(t, pool, schema)
	now := time.Now().UTC().Truncate(time.Microsecond)
	for i := range n {
		exe := &stead.Execution{ID: "e" + string(rune('1'+i)), DefinitionID: "d", Status: stead.StatusRunning, CreatedAt: now, UpdatedAt: now}
		if _, err := s.Commit(ctx, exe, stead.Bundle{}); err != nil {
			t.Fatal(err)
		}
	}
	return db, s, tr, rt
}

// modes are the ways pgx sends a statement that the shared transaction must work in: prepared
// and cached (a direct connection), and unprepared (pgdb.Config.PgBouncer).
var modes = []struct {
	name string
	mode pgx.QueryExecMode
}{{"cached", pgx.QueryExecModeCacheStatement}, {"unprepared", pgx.QueryExecModeExec}}

// TestUnbatchedStepRoundTrips checks what a worker with a shared transaction and a BatchSize of 1
// costs a step, making the calls its pipeline makes (worker/pipeline.go, together): two round
// trips, BEGIN with the claim and the load, then the step's commit with its ack and COMMIT. A
// batch costs one more, its commit; its acks travel with the COMMIT.
func TestUnbatchedStepRoundTrips(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			ctx := context.Background()
			db, _, tr, rt := countedSetup(t, m.mode, 1, 1)
			for i := range 3 {
				if err := tr.Publish(ctx, "e1", stead.Event{ID: "ev" + string(rune('1'+i)), Kind: "tick"}, 0); err != nil {
					t.Fatal(err)
				}
			}
			step := func(want int64) {
				t.Helper()
				tctx, cancel := context.WithTimeout(ctx, 10*time.Second) // Begin's timeouts travel with BEGIN
				defer cancel()
				before := rt.n.Load()
				tx, err := db.Begin(tctx)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback(ctx)
				ls, loaded, err := tx.Claim(tctx, "w", time.Minute, 0, 1, 16)
				if err != nil || len(ls) != 1 || len(loaded) != 1 || loaded[0].Execution == nil || loaded[0].Processed {
					t.Fatalf("claim: %v %+v %v", ls, loaded, err)
				}
				next := loaded[0].Execution.Clone()
				next.ActivePath = ls[0].Event.ID
				res, err := tx.Step(tctx, stead.CommitItem{Execution: next, Bundle: stead.Bundle{ProcessedEventID: ls[0].Event.ID}}, nil, &ls[0])
				if err != nil || res.Err != nil {
					t.Fatalf("step: %+v %v", res, err)
				}
				if err := tx.Commit(tctx); err != nil {
					t.Fatal(err)
				}
				if got := rt.n.Load() - before; want > 0 && got != want {
					t.Fatalf("a step took %d round trips, want %d", got, want)
				}
			}
			step(0) // prepares what the cache prepares
			step(2)
			step(2)
		})
	}
}

// TestBatchRoundTrips checks a batch's round trips: BEGIN with the claim and the load, the
// commit, the acks with COMMIT.
func TestBatchRoundTrips(t *testing.T) {
	ctx := context.Background()
	db, _, tr, rt := countedSetup(t, pgx.QueryExecModeCacheStatement, 1, 3)
	round := 0
	batch := func(want int64) {
		t.Helper()
		round++
		for _, g := range []string{"e1", "e2", "e3"} {
			if err := tr.Publish(ctx, g, stead.Event{ID: fmt.Sprint(g, "-", round), Kind: "tick"}, 0); err != nil {
				t.Fatal(err)
			}
		}
		before := rt.n.Load()
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		ls, loaded, err := tx.Claim(ctx, "w", time.Minute, 0, 8, 16)
		if err != nil || len(ls) != 3 || len(loaded) != 3 {
			t.Fatalf("claim: %v %+v %v", ls, loaded, err)
		}
		items := make([]stead.CommitItem, len(ls))
		for i := range ls {
			items[i] = stead.CommitItem{Execution: loaded[i].Execution.Clone(), Bundle: stead.Bundle{ProcessedEventID: ls[i].Event.ID}}
		}
		if res, err := tx.CommitBatch(ctx, items); err != nil || len(res) != 3 || res[0].Err != nil {
			t.Fatalf("commit: %+v %v", res, err)
		}
		if err := tx.Ack(ctx, ls); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if got := rt.n.Load() - before; want > 0 && got != want {
			t.Fatalf("a batch took %d round trips, want %d", got, want)
		}
	}
	batch(0)
	batch(3)
}

// TestClaimLoads checks what a claim loads with its leases: each lease's execution as the store
// has it, read once for several messages of one execution but each lease's its own copy, whether
// the event was processed, and nothing for a group that names no execution; in the order of the
// leases, whose groups come in the order of their heads, each group's messages together. Behind
// PgBouncer in transaction mode too, where the settings that carry the claim's refs to the load
// must hold within the transaction and nothing may be left for the session.
func TestClaimLoads(t *testing.T) {
	type at struct {
		name string
		url  func(testing.TB) string
		mode pgx.QueryExecMode
	}
	cases := []at{{"pgbouncer", pgdbtest.BouncerURL, pgx.QueryExecModeExec}}
	for _, m := range modes {
		cases = append(cases, at{m.name, func(testing.TB) string { return pgdbtest.URL() }, m.mode})
	}
	for _, m := range cases {
		t.Run(m.name, func(t *testing.T) {
			ctx := context.Background()
			db, s, tr, _ := countedSetupAt(t, m.url(t), m.mode, 2, 2)
			if _, err := s.Commit(ctx, &stead.Execution{ID: "e2", Version: 1, DefinitionID: "d", Status: stead.StatusRunning, ActivePath: "b",
				CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}, stead.Bundle{ProcessedEventID: "done"}); err != nil {
				t.Fatal(err)
			}
			for _, p := range [][2]string{{"e1", "a1"}, {"ghost", "g1"}, {"e2", "done"}, {"e1", "a2"}, {"e2", "b2"}, {"e1", "a3"}} {
				if err := tr.Publish(ctx, p[0], stead.Event{ID: p[1], Kind: "tick"}, 0); err != nil {
					t.Fatal(err)
				}
			}
			tx, err := db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			ls, loaded, err := tx.Claim(ctx, "w", time.Minute, 0, 8, 16)
			if err != nil || len(ls) != 6 || len(loaded) != 6 {
				t.Fatalf("claim: %v %+v %v", ls, loaded, err)
			}
			want := []struct {
				group, event string
				version      int64
				processed    bool
			}{{"e1", "a1", 1, false}, {"e1", "a2", 1, false}, {"e1", "a3", 1, false},
				{"ghost", "g1", 0, false}, {"e2", "done", 2, true}, {"e2", "b2", 2, false}}
			for i, w := range want {
				l, got := ls[i], loaded[i]
				if l.Group != w.group || l.Event.ID != w.event || got.Processed != w.processed {
					t.Errorf("%d: %s/%s processed %v, want %s/%s processed %v", i, l.Group, l.Event.ID, got.Processed, w.group, w.event, w.processed)
				}
				switch {
				case w.version == 0 && got.Execution != nil:
					t.Errorf("%d: loaded %+v for a group without an execution", i, got.Execution)
				case w.version != 0 && (got.Execution == nil || got.Execution.ID != w.group || got.Execution.Version != w.version):
					t.Errorf("%d: loaded %+v, want %s at version %d", i, got.Execution, w.group, w.version)
				}
			}
			if loaded[0].Execution == loaded[1].Execution {
				t.Error("two leases of one execution share its record")
			}
			// A second claim of the transaction loads its own leases, not the first's.
			if err := tr.Publish(ctx, "e3", stead.Event{ID: "c1", Kind: "tick"}, 0); err != nil {
				t.Fatal(err)
			}
			more, loaded, err := tx.Claim(ctx, "w", time.Minute, 0, 8, 16)
			if err != nil || len(more) != 1 || more[0].Group != "e3" || len(loaded) != 1 || loaded[0].Execution != nil {
				t.Fatalf("second claim: %v %+v %v", more, loaded, err)
			}
			if none, loaded, err := tx.Claim(ctx, "w", time.Minute, 0, 8, 16); err != nil || len(none) != 0 || len(loaded) != 0 {
				t.Fatalf("claim of nothing: %v %+v %v", none, loaded, err)
			}
		})
	}
}

var _ worker.SharedDB = (*pgtx.DB)(nil)

// ticker steps every event into the state named after it.
type ticker struct{}

func (ticker) Step(exe *stead.Execution, ev stead.Event, _ time.Time) (*stead.Execution, stead.Bundle, error) {
	next := exe.Clone()
	next.ActivePath = ev.ID
	return next, stead.Bundle{ProcessedEventID: ev.ID}, nil
}

// TestWorkerStepRoundTrips counts what an unbatched worker on the shared transaction sends a
// step, its background included (the relay, the timers, the idle polls): at most two round trips
// and a little more, where a load of its own made three.
func TestWorkerStepRoundTrips(t *testing.T) {
	const executions, warm, measured = 10, 20, 200
	ctx := context.Background()
	db, s, tr, rt := countedSetup(t, pgx.QueryExecModeCacheStatement, 4, 0)
	now := time.Now().UTC()
	for i := range executions {
		exe := &stead.Execution{ID: fmt.Sprint("x", i), DefinitionID: "d", Status: stead.StatusRunning, CreatedAt: now, UpdatedAt: now}
		if _, err := s.Commit(ctx, exe, stead.Bundle{}); err != nil {
			t.Fatal(err)
		}
	}
	for k := range warm + measured {
		if err := tr.Publish(ctx, fmt.Sprint("x", k%executions), stead.Event{ID: fmt.Sprint("ev", k), Kind: "tick"}, 0); err != nil {
			t.Fatal(err)
		}
	}
	var (
		commits   atomic.Int64
		from, to  atomic.Int64
		allCommit = make(chan struct{})
	)
	w, err := worker.New(worker.Config{
		Store: s, Transport: tr, Machines: worker.Machines{"d": ticker{}}, Name: "rt",
		Concurrency: 1, BatchSize: 1, SharedTx: db, Logger: slog.New(slog.DiscardHandler),
		OnCommit: func(*stead.Execution, stead.Event, time.Time) {
			switch commits.Add(1) {
			case warm: // the statements are prepared by now
				from.Store(rt.n.Load())
			case warm + measured:
				to.Store(rt.n.Load())
				close(allCommit)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	select {
	case <-allCommit:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d of %d steps committed in 30 s", commits.Load(), warm+measured)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	per := float64(to.Load()-from.Load()) / measured
	t.Logf("%.2f round trips a step", per)
	if per < 2 || per > 2.25 {
		t.Fatalf("%.2f round trips a step, want 2 (and a little for the worker's background)", per)
	}
}
