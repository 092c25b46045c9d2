package pgstore_test

// Tests only a real PostgreSQL server can host: several pools, several claimers, locks, timeouts.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/pgstore"
)

// twoStores returns two stores with their own pools on one fresh schema.
func twoStores(t *testing.T, opts ...pgstore.Option) (*pgstore.Store, *pgstore.Store) {
	t.Helper()
	a := newStore(t, opts...)
	b, err := pgstore.Open(context.Background(), pgdbtest.URL(), append([]pgstore.Option{pgstore.WithSchema(a.Schema()), pgstore.WithoutMigrate()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return a, b
}

func TestRacingPoolsExactlyOneWins(t *testing.T) {
	t.Parallel()
	a, b := twoStores(t)
	ctx := context.Background()
	bundles := map[string]func(round int) stead.Bundle{
		"state only": func(r int) stead.Bundle { return stead.Bundle{ProcessedEventID: fmt.Sprint("ev", r)} },
		"complex": func(r int) stead.Bundle {
			return stead.Bundle{
				ProcessedEventID: fmt.Sprint("ev", r),
				Emits:            []stead.Emit{{Target: "x", Event: stead.Event{ID: fmt.Sprint("out", r), Kind: "K"}}},
				Timers:           []stead.TimerOp{{Action: stead.TimerSchedule, Path: "p", FireAt: time.Unix(int64(r)+1, 0)}},
				Trace:            &stead.TraceStep{EventKind: "K"},
			}
		},
	}
	for name, bundle := range bundles {
		t.Run(name, func(t *testing.T) {
			id := "race-" + name
			exe := newExe(id)
			mustCommit(t, a, exe, stead.Bundle{})
			const rounds = 60
			for r := range rounds {
				stores := []*pgstore.Store{a, b}
				copies := []*stead.Execution{exe.Clone(), exe.Clone()}
				errs := make([]error, 2)
				var start, done sync.WaitGroup
				start.Add(1)
				for i := range 2 {
					done.Add(1)
					go func() {
						defer done.Done()
						start.Wait()
						if r%3 == 2 { // every third round through CommitBatch
							res, err := stores[i].CommitBatch(ctx, []stead.CommitItem{{Execution: copies[i], Bundle: bundle(r)}})
							if err == nil {
								err = res[0].Err
							}
							errs[i] = err
							return
						}
						_, errs[i] = stores[i].Commit(ctx, copies[i], bundle(r))
					}()
				}
				start.Done()
				done.Wait()
				wins := 0
				for i, err := range errs {
					switch {
					case err == nil:
						wins++
						exe = copies[i]
					case errors.Is(err, stead.ErrConflict):
						if copies[i].Version != int64(r+1) {
							t.Fatalf("round %d: loser's version moved to %d", r, copies[i].Version)
						}
					default:
						t.Fatalf("round %d: %v", r, err)
					}
				}
				if wins != 1 {
					t.Fatalf("round %d: %d winners, want exactly 1", r, wins)
				}
			}
			got, err := b.Load(ctx, id)
			if err != nil || got.Version != rounds+1 {
				t.Fatalf("final version = %v, %v; want %d", got, err, rounds+1)
			}
			if name == "complex" {
				out, _ := a.PendingOutbox(ctx, id, stead.MaxListLimit)
				trace, _ := a.ReadTrace(ctx, id)
				if len(out) != rounds || len(trace) != rounds || trace[rounds-1].Index != rounds-1 {
					t.Fatalf("%d outbox rows and %d trace steps, want %d of each (one per winner)", len(out), len(trace), rounds)
				}
			}
		})
	}
}

func TestTwoClaimersNeverShareARow(t *testing.T) {
	t.Parallel()
	a, b := twoStores(t)
	ctx := context.Background()
	const n = 300
	var items []stead.CommitItem
	for i := range n / 10 {
		var emits []stead.Emit
		for j := range 10 {
			emits = append(emits, stead.Emit{Target: "t", Event: stead.Event{ID: fmt.Sprint(i, "-", j), Kind: "K"}})
		}
		items = append(items, stead.CommitItem{Execution: newExe(fmt.Sprint("src", i)), Bundle: stead.Bundle{Emits: emits}})
	}
	if _, err := a.CommitBatch(ctx, items); err != nil {
		t.Fatal(err)
	}
	claimed := make([][]int64, 2)
	var wg sync.WaitGroup
	for i, s := range []*pgstore.Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := s.ClaimOutbox(ctx, time.Now(), time.Hour, 7)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				for _, e := range got {
					claimed[i] = append(claimed[i], e.Seq)
				}
			}
		}()
	}
	wg.Wait()
	seen := map[int64]int{}
	for i := range claimed {
		for _, seq := range claimed[i] {
			seen[seq]++
			if seen[seq] > 1 {
				t.Fatalf("seq %d handed out twice", seq)
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("claimed %d distinct rows, want %d", len(seen), n)
	}
	if len(claimed[0]) == 0 || len(claimed[1]) == 0 {
		t.Logf("one claimer got everything (%d / %d): the race did not interleave this time", len(claimed[0]), len(claimed[1]))
	}
}

func TestFailedBundleLeavesNothingVisible(t *testing.T) {
	t.Parallel()
	a, b := twoStores(t)
	ctx := context.Background()
	exe := newExe("x")
	mustCommit(t, a, exe, stead.Bundle{})
	// Plant a trace row where the commit's trace step will go, so that the last write of the
	// bundle fails on the primary key after every other write of the step has been made.
	if _, err := a.Pool().Exec(ctx, `INSERT INTO `+pgdb.Qualifier(a.Schema())+`stead_trace VALUES ('x', 0, '{}')`); err != nil {
		t.Fatal(err)
	}
	exe.Status = stead.StatusDone
	_, err := a.Commit(ctx, exe, stead.Bundle{
		Emits:            []stead.Emit{{Target: "y", Event: stead.Event{ID: "e", Kind: "K"}}},
		ProcessedEventID: "in",
		Spawns:           []stead.Spawn{{ChildID: "x:c"}},
		Timers:           []stead.TimerOp{{Action: stead.TimerSchedule, Path: "p", FireAt: time.Unix(5, 0)}},
		Trace:            &stead.TraceStep{EventKind: "K"},
	})
	if err == nil {
		t.Fatal("commit succeeded over a planted trace row")
	}
	if exe.Version != 1 {
		t.Fatalf("failed commit left version %d, want 1", exe.Version)
	}
	got, processed, err := b.LoadForEvent(ctx, "x", "in")
	if err != nil || got.Version != 1 || got.Status != stead.StatusRunning || processed {
		t.Fatalf("second pool sees %+v processed=%v err=%v; want the untouched v1", got, processed, err)
	}
	out, _ := b.PendingOutbox(ctx, "", 10)
	sp, _ := b.PendingSpawns(ctx, "", 10)
	tm, _ := b.Timers(ctx, "x")
	if len(out)+len(sp)+len(tm) != 0 {
		t.Fatalf("second pool sees outbox %v spawns %v timers %v", out, sp, tm)
	}
}

func TestCommitSeenAtOnceByAnotherPool(t *testing.T) {
	t.Parallel()
	a, b := twoStores(t)
	ctx := context.Background()
	exe := newExe("v")
	for i := range 30 {
		bundle := stead.Bundle{ProcessedEventID: fmt.Sprint("ev", i)}
		if i%2 == 1 {
			bundle.Emits = []stead.Emit{{Event: stead.Event{ID: fmt.Sprint("o", i), Kind: "K"}}}
		}
		mustCommit(t, a, exe, bundle)
		got, processed, err := b.LoadForEvent(ctx, "v", fmt.Sprint("ev", i))
		if err != nil || got.Version != exe.Version || !processed {
			t.Fatalf("commit %d: other pool loaded %v processed=%v err=%v", i, got, processed, err)
		}
	}
}

func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	pool := pgdbtest.Pool(t)
	ctx := context.Background()
	shared := pgdbtest.NewName(t)
	t.Cleanup(func() { pgdbtest.Drop(t, pool, shared) })
	var own []string
	for range 8 {
		name := pgdbtest.NewName(t)
		own = append(own, name)
		t.Cleanup(func() { pgdbtest.Drop(t, pool, name) })
	}
	// 8 goroutines migrate one fresh schema while 8 more each migrate a fresh schema of their own.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		schema := shared
		if i >= 8 {
			schema = own[i-8]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := pgstore.New(pool, pgstore.WithSchema(schema))
			if err == nil {
				err = s.Migrate(ctx)
			}
			if err == nil {
				err = s.Migrate(ctx) // a second run finds nothing to do
			}
			if err == nil {
				_, err = s.Commit(ctx, newExe(fmt.Sprint("m", i)), stead.Bundle{})
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{shared, "stead_executions"}.Sanitize()).Scan(&n); err != nil || n != 8 {
		t.Fatalf("shared schema holds %d executions (%v), want 8", n, err)
	}
}

func TestOpenRetriesThenUnavailable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	dsn := "postgres://postgres@" + addr + "/postgres?sslmode=disable&connect_timeout=2"

	start := time.Now()
	_, err = pgstore.Open(context.Background(), dsn, pgstore.WithConnectRetry(4, 50*time.Millisecond))
	if !errors.Is(err, stead.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Fatalf("gave up after %v: it did not wait between its 4 attempts", el)
	}

	// A context cancelled while it waits ends the retries at once.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = pgstore.Open(ctx, dsn, pgstore.WithConnectRetry(100, time.Second))
	if !errors.Is(err, stead.ErrUnavailable) || time.Since(start) > 2*time.Second {
		t.Fatalf("cancelled open: %v after %v", err, time.Since(start))
	}
}

// lockRow holds the execution's row lock in another transaction until the test ends.
func lockRow(t *testing.T, s *pgstore.Store, id string) {
	t.Helper()
	ctx := context.Background()
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+pgdb.Qualifier(s.Schema())+`stead_executions WHERE id = $1 FOR UPDATE`, id); err != nil {
		t.Fatal(err)
	}
}

func TestCancelledContextStopsPromptly(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	exe := newExe("locked")
	mustCommit(t, s, exe, stead.Bundle{})
	lockRow(t, s, "locked")
	calls := map[string]func(ctx context.Context) error{
		"state only": func(ctx context.Context) error { _, err := s.Commit(ctx, exe.Clone(), stead.Bundle{}); return err },
		"complex": func(ctx context.Context) error {
			_, err := s.Commit(ctx, exe.Clone(), stead.Bundle{Trace: &stead.TraceStep{}})
			return err
		},
		"append trace": func(ctx context.Context) error { _, err := s.AppendTrace(ctx, "locked", stead.TraceStep{}); return err },
		"purge":        func(ctx context.Context) error { _, err := s.Purge(ctx, "locked", 1); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			start := time.Now()
			err := call(ctx)
			if err == nil {
				t.Fatal("a call blocked on a row lock succeeded")
			}
			if el := time.Since(start); el > 3*time.Second {
				t.Fatalf("returned %v after the cancel", el)
			}
			if !errors.Is(err, context.Canceled) && !errors.Is(err, stead.ErrTimeout) {
				t.Fatalf("err = %v, want cancellation or ErrTimeout", err)
			}
		})
	}
	got, err := s.Load(context.Background(), "locked")
	if err != nil || got.Version != 1 {
		t.Fatalf("after the cancelled calls: %v, %v", got, err)
	}
}

func TestTimeouts(t *testing.T) {
	t.Parallel()
	t.Run("statement timeout", func(t *testing.T) {
		t.Parallel()
		s := newStore(t, pgstore.WithStatementTimeout(100*time.Millisecond))
		exe := newExe("slow")
		mustCommit(t, s, exe, stead.Bundle{})
		lockRow(t, s, "slow")
		if _, err := s.Commit(context.Background(), exe, stead.Bundle{}); !errors.Is(err, stead.ErrTimeout) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
		if exe.Version != 1 {
			t.Fatalf("version %d after a timeout", exe.Version)
		}
	})
	t.Run("acquire timeout", func(t *testing.T) {
		t.Parallel()
		s := newStore(t, pgstore.WithMaxConns(1), pgstore.WithAcquireTimeout(50*time.Millisecond))
		conn, err := s.Pool().Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		if _, err := s.Load(context.Background(), "any"); !errors.Is(err, stead.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
	})
}

func TestOpenRefusesUnsafeSchema(t *testing.T) {
	t.Parallel()
	pool := pgdbtest.Pool(t)
	for _, name := range []string{"a;drop table x", "1abc", "pg_catalog", `a"b`, "with space", "x\x00"} {
		if _, err := pgstore.Open(context.Background(), pgdbtest.URL(), pgstore.WithSchema(name)); !errors.Is(err, stead.ErrInvalid) {
			t.Errorf("Open(%q) = %v, want ErrInvalid", name, err)
		}
		if _, err := pgstore.New(pool, pgstore.WithSchema(name)); !errors.Is(err, stead.ErrInvalid) {
			t.Errorf("New(%q) = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := pgstore.New(nil); !errors.Is(err, stead.ErrInvalid) {
		t.Errorf("New(nil) = %v, want ErrInvalid", err)
	}
	if _, err := pgstore.Open(context.Background(), "postgres://%zz"); !errors.Is(err, stead.ErrInvalid) {
		t.Errorf("malformed dsn: %v, want ErrInvalid", err)
	}
}

func TestWithoutMigrate(t *testing.T) {
	t.Parallel()
	pool := pgdbtest.Pool(t)
	ctx := context.Background()
	name := pgdbtest.NewName(t)
	t.Cleanup(func() { pgdbtest.Drop(t, pool, name) })
	if _, err := pgstore.Open(ctx, pgdbtest.URL(), pgstore.WithSchema(name), pgstore.WithoutMigrate()); err == nil {
		t.Fatal("Open WithoutMigrate accepted an empty schema")
	}
	s, err := pgstore.New(pool, pgstore.WithSchema(name))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckSchema(ctx); err == nil {
		t.Fatal("CheckSchema accepted an empty schema")
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckSchema(ctx); err != nil {
		t.Fatalf("after Migrate: %v", err)
	}
	o, err := pgstore.Open(ctx, pgdbtest.URL(), pgstore.WithSchema(name), pgstore.WithoutMigrate())
	if err != nil {
		t.Fatalf("Open WithoutMigrate after Migrate: %v", err)
	}
	o.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("Close of a New store closed the application's pool: %v", err)
	}
	if _, err := s.Load(ctx, "a"); !errors.Is(err, stead.ErrClosed) {
		t.Fatalf("load after close: %v", err)
	}
	if _, err := s.CommitBatch(ctx, []stead.CommitItem{{Execution: newExe("a")}}); !errors.Is(err, stead.ErrClosed) {
		t.Fatalf("batch after close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestSharedTransaction(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	exe := newExe("shared")
	mustCommit(t, s, exe, stead.Bundle{})
	step := func(tx pgx.Tx) ([]stead.CommitItem, []stead.CommitResult) {
		loaded, err := s.LoadForEventsTx(ctx, tx, []stead.EventRef{{ExecutionID: "shared", EventID: "ev"}})
		if err != nil || loaded[0].Execution == nil || loaded[0].Processed {
			t.Fatalf("load in tx: %+v, %v", loaded, err)
		}
		items := []stead.CommitItem{
			{Execution: loaded[0].Execution, Bundle: stead.Bundle{ProcessedEventID: "ev", Emits: []stead.Emit{{Event: stead.Event{ID: "o", Kind: "K"}}}}},
			{Execution: newExe("born")},
		}
		res, err := s.CommitBatchTx(ctx, tx, items)
		if err != nil || res[0].Err != nil || res[1].Err != nil {
			t.Fatalf("commit in tx: %+v, %v", res, err)
		}
		return items, res
	}

	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	items, res := step(tx)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	pgstore.UndoVersions(items, res)
	if items[0].Execution.Version != 1 || items[1].Execution.Version != 0 {
		t.Fatalf("versions after undo: %d, %d", items[0].Execution.Version, items[1].Execution.Version)
	}
	if _, err := s.Load(ctx, "born"); !errors.Is(err, stead.ErrNotFound) {
		t.Fatalf("rolled back insert is visible: %v", err)
	}

	err = pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error { step(tx); return nil })
	if err != nil {
		t.Fatal(err)
	}
	got, processed, err := s.LoadForEvent(ctx, "shared", "ev")
	if err != nil || got.Version != 2 || !processed {
		t.Fatalf("after commit: %+v %v %v", got, processed, err)
	}
}

func TestPgBouncerMode(t *testing.T) {
	t.Parallel()
	s := newStore(t, pgstore.WithPgBouncer())
	ctx := context.Background()
	exe := newExe("pb")
	mustCommit(t, s, exe, stead.Bundle{ProcessedEventID: "a"})
	seqs := mustCommit(t, s, exe, stead.Bundle{
		Emits:  []stead.Emit{{Target: "t", Event: stead.Event{ID: "e", Kind: "K"}}},
		Timers: []stead.TimerOp{{Action: stead.TimerSchedule, Path: "p", FireAt: time.Unix(100, 0)}},
		Spawns: []stead.Spawn{{ChildID: "c", Context: []byte(`{}`)}},
		Trace:  &stead.TraceStep{EventKind: "K"},
	})
	if len(seqs) != 1 {
		t.Fatalf("seqs %v", seqs)
	}
	if _, err := s.CommitBatch(ctx, []stead.CommitItem{{Execution: newExe("pb2")}}); err != nil {
		t.Fatal(err)
	}
	p, err := s.List(ctx, stead.ListFilter{Statuses: []stead.Status{stead.StatusRunning, stead.StatusDone}, Limit: 1})
	if err != nil || len(p.Items) != 1 || p.NextCursor == "" {
		t.Fatalf("list: %+v %v", p, err)
	}
	if l, err := s.LoadForEvents(ctx, []stead.EventRef{{ExecutionID: "pb", EventID: "a"}}); err != nil || !l[0].Processed {
		t.Fatalf("load for events: %+v %v", l, err)
	}
	if c, err := s.ClaimOutbox(ctx, time.Now(), time.Second, 5); err != nil || len(c) != 1 {
		t.Fatalf("claim: %+v %v", c, err)
	}
	if d, err := s.DueTimers(ctx, time.Unix(100, 0), 5); err != nil || len(d) != 1 {
		t.Fatalf("due: %+v %v", d, err)
	}
	if ok, err := s.Purge(ctx, "pb", exe.Version); !ok || err != nil {
		t.Fatalf("purge: %v %v", ok, err)
	}
}

// Two pools commit batches over the same executions at the same versions, in opposite orders:
// every execution is won by exactly one batch, every round.
func TestRacingBatches(t *testing.T) {
	t.Parallel()
	a, b := twoStores(t)
	ctx := context.Background()
	const n, rounds = 20, 15
	exes := make([]*stead.Execution, n)
	var seed []stead.CommitItem
	for i := range exes {
		exes[i] = newExe(fmt.Sprintf("x%02d", i))
		seed = append(seed, stead.CommitItem{Execution: exes[i]})
	}
	if _, err := a.CommitBatch(ctx, seed); err != nil {
		t.Fatal(err)
	}
	for r := range rounds {
		batches := make([][]stead.CommitItem, 2)
		for i := range n {
			batches[0] = append(batches[0], stead.CommitItem{Execution: exes[i].Clone(), Bundle: stead.Bundle{ProcessedEventID: fmt.Sprint("a", r)}})
			batches[1] = append(batches[1], stead.CommitItem{Execution: exes[n-1-i].Clone(), Bundle: stead.Bundle{ProcessedEventID: fmt.Sprint("b", r),
				Emits: []stead.Emit{{Event: stead.Event{ID: fmt.Sprint("e", r), Kind: "K"}}}}})
		}
		results := make([][]stead.CommitResult, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, s := range []*pgstore.Store{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = s.CommitBatch(ctx, batches[i])
			}()
		}
		wg.Wait()
		won := map[string]*stead.Execution{}
		for i := range 2 {
			if errs[i] != nil {
				if !errors.Is(errs[i], stead.ErrConflict) {
					t.Fatalf("round %d batch %d: %v", r, i, errs[i])
				}
				continue // a deadlock victim: nothing of it landed
			}
			for j, res := range results[i] {
				exe := batches[i][j].Execution
				switch {
				case res.Err == nil:
					if won[exe.ID] != nil {
						t.Fatalf("round %d: %s won by both batches", r, exe.ID)
					}
					won[exe.ID] = exe
				case !errors.Is(res.Err, stead.ErrConflict):
					t.Fatalf("round %d: %s: %v", r, exe.ID, res.Err)
				}
			}
		}
		if len(won) != n {
			t.Fatalf("round %d: %d of %d executions won", r, len(won), n)
		}
		for i := range exes {
			exes[i] = won[exes[i].ID]
		}
	}
}

// AppendTrace and commits with a trace step race on one execution from two pools: every step
// gets its own index, the indices are 0..n-1 without gaps, because both take the index from the
// execution row they lock.
func TestTraceIndexUnderConcurrency(t *testing.T) {
	t.Parallel()
	a, b := twoStores(t, pgstore.WithTraceCap(0))
	ctx := context.Background()
	exe := newExe("tr")
	mustCommit(t, a, exe, stead.Bundle{})
	const appends, commits = 40, 20
	var wg sync.WaitGroup
	errs := make(chan error, appends+commits)
	for i := range appends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := []*pgstore.Store{a, b}[i%2].AppendTrace(ctx, "tr", stead.TraceStep{EventKind: "append"})
			errs <- err
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range commits {
			if _, err := b.Commit(ctx, exe, stead.Bundle{Trace: &stead.TraceStep{EventKind: "commit"}}); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	trace, err := a.ReadTrace(ctx, "tr")
	if err != nil {
		t.Fatal(err)
	}
	if len(trace) != appends+commits {
		t.Fatalf("%d trace steps, want %d", len(trace), appends+commits)
	}
	for i, st := range trace {
		if st.Index != int64(i) {
			t.Fatalf("step %d has index %d", i, st.Index)
		}
	}
}

// TestQueueCommit runs QueueCommit inside a transaction: a won commit fills in its result and
// bumps the version when the batch is read, a lost one reports the conflict and writes nothing,
// and invalid input queues nothing.
func TestQueueCommit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		bundle stead.Bundle
		seqs   int
	}{
		{"state only", stead.Bundle{ProcessedEventID: "ev"}, 0},
		{"with emits", stead.Bundle{ProcessedEventID: "ev", Emits: []stead.Emit{
			{Target: "x", Event: stead.Event{ID: "e1", Kind: "K"}},
			{Target: "y", Event: stead.Event{ID: "e2", Kind: "K"}}}}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			ctx := context.Background()
			exe := newExe("q")
			mustCommit(t, s, exe, stead.Bundle{})
			stale := exe.Clone()

			var res stead.CommitResult
			err := pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
				b := &pgx.Batch{}
				if err := s.QueueCommit(b, exe, tt.bundle, &res); err != nil {
					return err
				}
				if b.Len() != 1 {
					t.Fatalf("queued %d statements, want 1", b.Len())
				}
				return tx.SendBatch(ctx, b).Close()
			})
			if err != nil || res.Err != nil || len(res.Seqs) != tt.seqs || exe.Version != 2 {
				t.Fatalf("won commit: err %v, result %+v, version %d", err, res, exe.Version)
			}
			if _, processed, err := s.LoadForEvent(ctx, "q", "ev"); err != nil || !processed {
				t.Fatalf("after the won commit: processed %v, %v", processed, err)
			}

			// The stale copy loses: a conflict in the result, the version untouched, nothing written.
			res = stead.CommitResult{}
			err = pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
				b := &pgx.Batch{}
				if err := s.QueueCommit(b, stale, stead.Bundle{ProcessedEventID: "ev2"}, &res); err != nil {
					return err
				}
				return tx.SendBatch(ctx, b).Close()
			})
			var ce *stead.ConflictError
			if err != nil || !errors.As(res.Err, &ce) || ce.Expected != 1 || stale.Version != 1 {
				t.Fatalf("lost commit: err %v, result %+v, version %d", err, res, stale.Version)
			}
			if _, processed, _ := s.LoadForEvent(ctx, "q", "ev2"); processed {
				t.Fatal("the lost commit wrote its dedupe marker")
			}
		})
	}
}

func TestQueueCommitInvalid(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	var res stead.CommitResult
	tests := []struct {
		name   string
		b      *pgx.Batch
		exe    *stead.Execution
		bundle stead.Bundle
		res    *stead.CommitResult
	}{
		{"nil batch", nil, newExe("a"), stead.Bundle{}, &res},
		{"nil execution", &pgx.Batch{}, nil, stead.Bundle{}, &res},
		{"nil result", &pgx.Batch{}, newExe("a"), stead.Bundle{}, nil},
		{"empty id", &pgx.Batch{}, newExe(""), stead.Bundle{}, &res},
		{"NUL in event id", &pgx.Batch{}, newExe("a"), stead.Bundle{ProcessedEventID: "e\x00"}, &res},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.QueueCommit(tt.b, tt.exe, tt.bundle, tt.res)
			if !errors.Is(err, stead.ErrInvalid) {
				t.Fatalf("QueueCommit = %v, want ErrInvalid", err)
			}
			if tt.b != nil && tt.b.Len() != 0 {
				t.Fatalf("queued %d statements for invalid input", tt.b.Len())
			}
		})
	}
}
