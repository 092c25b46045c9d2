package pgstore_test

// Tests only a real PostgreSQL server can host: several pools, several claimers, locks, timeouts.

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
func twoStores(t *testing.T, opts ...pgstore.Option) (*stead.Store, *stead.Store) {
	t.Helper()
	a := newStore(t, opts...)
	opts = append([]pgstore.Option{pgstore.WithSchema(backend(t, a).Schema()), pgstore.WithoutMigrate()}, opts...)
	b, err := pgstore.New(context.Background(), pgdbtest.Pool(t), opts...)
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
				stores := []*stead.Store{a, b}
				copies := []*stead.Execution{exe.Clone(), exe.Clone()}
				versions := make([]int64, 2)
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
								versions[i] = res[0].Version
							}
							errs[i] = err
							return
						}
						c, err := stores[i].Commit(ctx, copies[i], bundle(r))
						versions[i], errs[i] = c.Version, err
					}()
				}
				start.Done()
				done.Wait()
				wins := 0
				for i, err := range errs {
					switch {
					case err == nil:
						wins++
						if versions[i] != int64(r+2) {
							t.Fatalf("round %d: the winner committed version %d, want %d", r, versions[i], r+2)
						}
						exe = copies[i]
						exe.Version = versions[i]
					case errors.Is(err, stead.ErrConflict):
						var ce *stead.ConflictError
						if !errors.As(err, &ce) || ce.Expected != int64(r+1) {
							t.Fatalf("round %d: the loser's conflict is %v, want one expecting %d", r, err, r+1)
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
	for i, s := range []*stead.Store{a, b} {
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
	ab := backend(t, a)
	if _, err := ab.Pool().Exec(ctx, `INSERT INTO `+pgdb.Qualifier(ab.Schema())+`stead_trace VALUES ('x', 0, '{}')`); err != nil {
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
			s, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
			if err == nil {
				_, err = pgstore.New(ctx, pool, pgstore.WithSchema(schema)) // a second run finds nothing to do
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

// lockRow holds the execution's row lock in another transaction until the test ends.
func lockRow(t *testing.T, s *stead.Store, id string) {
	t.Helper()
	ctx := context.Background()
	b := backend(t, s)
	tx, err := b.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+pgdb.Qualifier(b.Schema())+`stead_executions WHERE id = $1 FOR UPDATE`, id); err != nil {
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
		// The schema is migrated without the timeout, which a loaded machine's migration can
		// exceed; the store under test opens on the migrated schema.
		name := pgdbtest.NewName(t)
		migrated, err := pgstore.New(context.Background(), openPool(t, pgdb.Config{}), pgstore.WithSchema(name))
		if err != nil {
			t.Fatalf("migrate: %v", err)
		}
		t.Cleanup(func() { _ = migrated.Close(); pgdbtest.Drop(t, pgdbtest.Pool(t), name) })
		s, err := pgstore.New(context.Background(), openPool(t, pgdb.Config{StatementTimeout: 100 * time.Millisecond}),
			pgstore.WithSchema(name))
		if err != nil {
			t.Fatalf("new store: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		exe := newExe("slow")
		mustCommit(t, s, exe, stead.Bundle{})
		lockRow(t, s, "slow")
		if _, err := s.Commit(context.Background(), exe, stead.Bundle{}); !errors.Is(err, stead.ErrTimeout) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
	})
	// A call whose context ends while it waits for a pooled connection sent nothing.
	t.Run("no free connection", func(t *testing.T) {
		t.Parallel()
		pool := openPool(t, pgdb.Config{MaxConns: 1})
		s := newStoreOn(t, pool)
		conn, err := pool.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := s.Load(ctx, "any"); !errors.Is(err, stead.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
	})
}

func TestNewRefusesBadArguments(t *testing.T) {
	t.Parallel()
	pool := pgdbtest.Pool(t)
	ctx := context.Background()
	for _, name := range []string{"a;drop table x", "1abc", "pg_catalog", `a"b`, "with space", "x\x00"} {
		if _, err := pgstore.New(ctx, pool, pgstore.WithSchema(name)); !errors.Is(err, stead.ErrInvalid) {
			t.Errorf("New(%q) = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := pgstore.New(ctx, nil); !errors.Is(err, stead.ErrInvalid) {
		t.Errorf("New(nil) = %v, want ErrInvalid", err)
	}
}

// Under WithoutMigrate, New runs no DDL and accepts only a schema at exactly its version.
func TestWithoutMigrate(t *testing.T) {
	t.Parallel()
	pool := pgdbtest.Pool(t)
	ctx := context.Background()
	name := pgdbtest.NewName(t)
	t.Cleanup(func() { pgdbtest.Drop(t, pool, name) })
	if _, err := pgstore.New(ctx, pool, pgstore.WithSchema(name), pgstore.WithoutMigrate()); err == nil {
		t.Fatal("New WithoutMigrate accepted a schema that was never migrated")
	}
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, name).Scan(&exists); err != nil || exists {
		t.Fatalf("New WithoutMigrate created the schema (%v, %v)", exists, err)
	}
	s, err := pgstore.New(ctx, pool, pgstore.WithSchema(name))
	if err != nil {
		t.Fatal(err)
	}
	o, err := pgstore.New(ctx, pool, pgstore.WithSchema(name), pgstore.WithoutMigrate())
	if err != nil {
		t.Fatalf("New WithoutMigrate after a migration: %v", err)
	}
	o.Close()

	// A schema migrated by a newer build is refused too.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the point is to roll back
	if _, err := tx.Exec(ctx, `INSERT INTO `+pgx.Identifier{name, "stead_migrations"}.Sanitize()+` (version, name) VALUES (999, 'future')`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pgstore.New(ctx, pool, pgstore.WithSchema(name), pgstore.WithoutMigrate()); err == nil {
		t.Fatal("New WithoutMigrate accepted a schema newer than its migrations")
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("Close closed the application's pool: %v", err)
	}
	if _, err := s.Load(ctx, "a"); !errors.Is(err, stead.ErrClosed) {
		t.Fatalf("load after close: %v", err)
	}
	if _, err := backend(t, s).CommitBatchTx(ctx, tx, []stead.CommitItem{{Execution: newExe("a")}}); !errors.Is(err, stead.ErrClosed) {
		t.Fatalf("commit in a transaction after close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

// The transaction methods leave their arguments alone, so a rollback needs no undoing: the
// caller's executions are still at the versions the database keeps.
func TestSharedTransaction(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	b := backend(t, s)
	ctx := context.Background()
	exe := newExe("shared")
	mustCommit(t, s, exe, stead.Bundle{})
	step := func(tx pgx.Tx) []stead.CommitItem {
		loaded, err := b.LoadForEventsTx(ctx, tx, []stead.EventRef{{ExecutionID: "shared", EventID: "ev"}})
		if err != nil || loaded[0].Execution == nil || loaded[0].Processed {
			t.Fatalf("load in tx: %+v, %v", loaded, err)
		}
		items := []stead.CommitItem{
			{Execution: loaded[0].Execution, Bundle: stead.Bundle{ProcessedEventID: "ev", Emits: []stead.Emit{{Event: stead.Event{ID: "o", Kind: "K"}}}}},
			{Execution: newExe("born")},
		}
		res, err := b.CommitBatchTx(ctx, tx, items)
		if err != nil || res[0].Err != nil || res[1].Err != nil {
			t.Fatalf("commit in tx: %+v, %v", res, err)
		}
		if res[0].Version != 2 || len(res[0].Seqs) != 1 || res[1].Version != 1 {
			t.Fatalf("results %+v, want versions 2 (one seq) and 1", res)
		}
		if items[0].Execution.Version != 1 || items[1].Execution.Version != 0 {
			t.Fatalf("the commit changed its items: versions %d, %d", items[0].Execution.Version, items[1].Execution.Version)
		}
		return items
	}

	tx, err := b.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	step(tx)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, "born"); !errors.Is(err, stead.ErrNotFound) {
		t.Fatalf("rolled back insert is visible: %v", err)
	}

	err = pgx.BeginFunc(ctx, b.Pool(), func(tx pgx.Tx) error { step(tx); return nil })
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
	s := newStoreOn(t, openPool(t, pgdb.Config{PgBouncer: true}))
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
	var initial []stead.CommitItem
	for i := range exes {
		exes[i] = newExe(fmt.Sprintf("x%02d", i))
		initial = append(initial, stead.CommitItem{Execution: exes[i]})
	}
	res, err := a.CommitBatch(ctx, initial)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		exes[i].Version = r.Version
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
		for i, s := range []*stead.Store{a, b} {
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
					exe.Version = res.Version
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
			_, err := []*stead.Store{a, b}[i%2].AppendTrace(ctx, "tr", stead.TraceStep{EventKind: "append"})
			errs <- err
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range commits {
			c, err := b.Commit(ctx, exe, stead.Bundle{Trace: &stead.TraceStep{EventKind: "commit"}})
			if err != nil {
				errs <- err
				return
			}
			exe.Version = c.Version
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

// TestQueueCommitResult runs QueueCommitGuarded inside a transaction: a won commit fills in its
// result (version and emits' seqs) when the batch is read, a lost one reports the conflict and
// writes nothing, and neither changes the execution it was given.
func TestQueueCommitResult(t *testing.T) {
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
			b := backend(t, s)
			ctx := context.Background()
			exe := newExe("q")
			mustCommit(t, s, exe, stead.Bundle{})

			var res stead.CommitResult
			err := pgx.BeginFunc(ctx, b.Pool(), func(tx pgx.Tx) error {
				batch := &pgx.Batch{}
				if err := b.QueueCommitGuarded(batch, exe, tt.bundle, &res); err != nil {
					return err
				}
				if batch.Len() != 2 {
					t.Fatalf("queued %d statements, want the commit and its guard", batch.Len())
				}
				return tx.SendBatch(ctx, batch).Close()
			})
			if err != nil || res.Err != nil || len(res.Seqs) != tt.seqs || res.Version != 2 || exe.Version != 1 {
				t.Fatalf("won commit: err %v, result %+v, execution at version %d", err, res, exe.Version)
			}
			if _, processed, err := s.LoadForEvent(ctx, "q", "ev"); err != nil || !processed {
				t.Fatalf("after the won commit: processed %v, %v", processed, err)
			}

			// exe is stale now: it loses, with a conflict in the result and nothing written.
			res = stead.CommitResult{}
			err = pgx.BeginFunc(ctx, b.Pool(), func(tx pgx.Tx) error {
				batch := &pgx.Batch{}
				if err := b.QueueCommitGuarded(batch, exe, stead.Bundle{ProcessedEventID: "ev2"}, &res); err != nil {
					return err
				}
				return tx.SendBatch(ctx, batch).Close()
			})
			var ce *stead.ConflictError
			if !errors.Is(pgdb.Classify(err), stead.ErrConflict) || !errors.As(res.Err, &ce) || ce.Expected != 1 || res.Version != 0 {
				t.Fatalf("lost commit: err %v, result %+v", err, res)
			}
			if _, processed, _ := s.LoadForEvent(ctx, "q", "ev2"); processed {
				t.Fatal("the lost commit wrote its dedupe marker")
			}
		})
	}
}

// TestQueueCommitGuarded checks the guard behind a queued commit: after a won commit the
// statements queued behind it run and the transaction commits; after a lost one — here against
// a version another transaction wrote, which the guard must not take for its own — the guard
// aborts the transaction, the statements behind it do not run, and nothing commits.
func TestQueueCommitGuarded(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	b := backend(t, s)
	ctx := context.Background()
	exe := newExe("g")
	mustCommit(t, s, exe, stead.Bundle{})
	exe.Version = 1
	stale := exe.Clone()

	send := func(e *stead.Execution, event string, res *stead.CommitResult, after *bool) error {
		tx, err := b.Pool().Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx) //nolint:errcheck // ends an aborted transaction
		batch := &pgx.Batch{}
		if err := b.QueueCommitGuarded(batch, e, stead.Bundle{ProcessedEventID: event}, res); err != nil {
			return err
		}
		batch.Queue("SELECT true").QueryRow(func(r pgx.Row) error { return r.Scan(after) })
		batch.Queue("COMMIT")
		return tx.SendBatch(ctx, batch).Close()
	}
	var res stead.CommitResult
	var after bool
	if err := send(exe, "ev", &res, &after); err != nil || res.Err != nil || res.Version != 2 || !after {
		t.Fatalf("won: err %v, result %+v, statement behind the guard ran: %v", err, res, after)
	}
	if _, processed, err := s.LoadForEvent(ctx, "g", "ev"); err != nil || !processed {
		t.Fatalf("after the won commit: processed %v, %v", processed, err)
	}

	// stale is at version 1; the store holds version 2, written by the transaction above.
	res, after = stead.CommitResult{}, false
	err := send(stale, "ev2", &res, &after)
	var ce *stead.ConflictError
	if !errors.Is(pgdb.Classify(err), stead.ErrConflict) || !errors.As(res.Err, &ce) || after {
		t.Fatalf("lost: err %v, result %+v, statement behind the guard ran: %v", err, res, after)
	}
	got, processed, err := s.LoadForEvent(ctx, "g", "ev2")
	if err != nil || processed || got.Version != 2 {
		t.Fatalf("after the lost commit: version %d, processed %v, %v", got.Version, processed, err)
	}
}

// The transaction entry points refuse what the Store refuses, and queue or send nothing.
func TestTxEntryPointsRefuseBadInput(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	b := backend(t, s)
	ctx := context.Background()
	tx, err := b.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // nothing to keep
	var res stead.CommitResult
	queue := []struct {
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
		{"timer without time", &pgx.Batch{}, newExe("a"), stead.Bundle{Timers: []stead.TimerOp{{Action: stead.TimerSchedule, Path: "p"}}}, &res},
	}
	for _, tt := range queue {
		t.Run("queue commit/"+tt.name, func(t *testing.T) {
			err := b.QueueCommitGuarded(tt.b, tt.exe, tt.bundle, tt.res)
			if !errors.Is(err, stead.ErrInvalid) {
				t.Fatalf("QueueCommitGuarded = %v, want ErrInvalid", err)
			}
			if tt.b != nil && tt.b.Len() != 0 {
				t.Fatalf("queued %d statements for invalid input", tt.b.Len())
			}
		})
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"load for events/nil tx", func() error {
			_, err := b.LoadForEventsTx(ctx, nil, []stead.EventRef{{ExecutionID: "a", EventID: "e"}})
			return err
		}},
		{"load for events/empty event id", func() error {
			_, err := b.LoadForEventsTx(ctx, tx, []stead.EventRef{{ExecutionID: "a"}})
			return err
		}},
		{"load for events/too many", func() error {
			refs := make([]stead.EventRef, stead.MaxBatch+1)
			for i := range refs {
				refs[i] = stead.EventRef{ExecutionID: fmt.Sprint("a", i), EventID: "e"}
			}
			_, err := b.LoadForEventsTx(ctx, tx, refs)
			return err
		}},
		{"commit batch/nil tx", func() error {
			_, err := b.CommitBatchTx(ctx, nil, []stead.CommitItem{{Execution: newExe("a")}})
			return err
		}},
		{"commit batch/too many", func() error {
			_, err := b.CommitBatchTx(ctx, tx, make([]stead.CommitItem, stead.MaxBatch+1))
			return err
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			if err := c.call(); !errors.Is(err, stead.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
	// An invalid item is refused in its result; the transaction is still usable.
	res2, err := b.CommitBatchTx(ctx, tx, []stead.CommitItem{{Execution: newExe("")}})
	if err != nil || !errors.Is(res2[0].Err, stead.ErrInvalid) {
		t.Fatalf("invalid item: %+v, %v", res2, err)
	}
	if _, err := b.LoadForEventsTx(ctx, tx, []stead.EventRef{{ExecutionID: "a", EventID: "e"}}); err != nil {
		t.Fatalf("the transaction is unusable after refused input: %v", err)
	}
}

// A deadlock PostgreSQL detects fails the victim with ErrConflict, and the victim's writes are
// gone. The application's transaction holds B and then waits for A, while a CommitBatch (which
// locks in id order) holds A and waits for B. Either may be the victim; whichever it is, its
// error is a conflict and only the survivor's writes land.
func TestDeadlockIsConflict(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	b := backend(t, s)
	ctx := context.Background()
	a1, b1 := newExe("a"), newExe("b")
	mustCommit(t, s, a1, stead.Bundle{})
	mustCommit(t, s, b1, stead.Bundle{})

	tx, err := b.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op once committed
	if res, err := b.CommitBatchTx(ctx, tx, []stead.CommitItem{{Execution: b1, Bundle: stead.Bundle{ProcessedEventID: "tx"}}}); err != nil || res[0].Err != nil {
		t.Fatalf("lock b in the transaction: %+v, %v", res, err)
	}
	batchErr := make(chan error, 1)
	go func() {
		res, err := s.CommitBatch(ctx, []stead.CommitItem{
			{Execution: a1, Bundle: stead.Bundle{ProcessedEventID: "batch"}},
			{Execution: b1, Bundle: stead.Bundle{ProcessedEventID: "batch"}},
		})
		if err == nil && (res[0].Err != nil || res[1].Err != nil) {
			err = fmt.Errorf("batch items: %v, %v", res[0].Err, res[1].Err)
		}
		batchErr <- err
	}()
	// Let the batch lock a and start waiting for b before the transaction asks for a.
	waitForLockWait(t, b)
	_, txErr := b.CommitBatchTx(ctx, tx, []stead.CommitItem{{Execution: a1, Bundle: stead.Bundle{ProcessedEventID: "tx"}}})
	if txErr != nil {
		// The transaction was the victim: it is aborted, and the batch goes through.
		t.Log("the transaction was the victim")
		if !errors.Is(txErr, stead.ErrConflict) {
			t.Fatalf("the transaction's deadlock: %v, want ErrConflict", txErr)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-batchErr; err != nil {
			t.Fatalf("the batch after the transaction's deadlock: %v", err)
		}
		assertProcessed(t, s, "batch", "tx")
		return
	}
	t.Log("the batch was the victim")
	err = <-batchErr
	if !errors.Is(err, stead.ErrConflict) {
		t.Fatalf("the batch's deadlock: %v, want ErrConflict", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	assertProcessed(t, s, "tx", "batch")
}

// waitForLockWait returns once a connection of b's pool waits for a row lock.
func waitForLockWait(t *testing.T, b *pgstore.Backend) {
	t.Helper()
	for range 200 {
		var waiting bool
		if err := b.Pool().QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'
				AND strpos(query, $1) > 0 AND strpos(query, 'stead_commit_batch') > 0)`, b.Schema()).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the batch never waited for the transaction's lock")
}

// assertProcessed checks that executions a and b carry the marker of winner and not that of loser,
// and are at version 2: only the winner's commits landed.
func assertProcessed(t *testing.T, s *stead.Store, winner, loser string) {
	t.Helper()
	for _, id := range []string{"a", "b"} {
		got, won, err := s.LoadForEvent(context.Background(), id, winner)
		if err != nil || !won || got.Version != 2 {
			t.Fatalf("%s: %+v, processed %q = %v, %v; want version 2 with the marker", id, got, winner, won, err)
		}
		if lost, _ := s.IsProcessed(context.Background(), id, loser); lost {
			t.Fatalf("%s: the deadlock victim's marker %q landed", id, loser)
		}
	}
}

// In a REPEATABLE READ transaction, committing an execution another commit changed since the
// transaction's snapshot is a serialization failure: ErrConflict, through each entry point.
func TestSerializationFailureIsConflict(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	b := backend(t, s)
	ctx := context.Background()
	tests := []struct {
		name   string
		commit func(tx pgx.Tx, exe *stead.Execution) error
	}{
		{"commit batch", func(tx pgx.Tx, exe *stead.Execution) error {
			res, err := b.CommitBatchTx(ctx, tx, []stead.CommitItem{{Execution: exe}, {Execution: newExe(exe.ID + "-new")}})
			if err == nil {
				err = errors.Join(res[0].Err, res[1].Err)
			}
			return err
		}},
		{"commit batch of one", func(tx pgx.Tx, exe *stead.Execution) error {
			res, err := b.CommitBatchTx(ctx, tx, []stead.CommitItem{{Execution: exe}})
			if err == nil {
				err = res[0].Err
			}
			return err
		}},
		{"queue commit", func(tx pgx.Tx, exe *stead.Execution) error {
			batch := &pgx.Batch{}
			var res stead.CommitResult
			if err := b.QueueCommitGuarded(batch, exe, stead.Bundle{Emits: []stead.Emit{{Event: stead.Event{ID: "e", Kind: "K"}}}}, &res); err != nil {
				return err
			}
			if err := tx.SendBatch(ctx, batch).Close(); err != nil {
				return err
			}
			return res.Err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := strings.ReplaceAll(tt.name, " ", "-")
			exe := newExe(id)
			mustCommit(t, s, exe, stead.Bundle{})
			tx, err := b.Pool().BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck // it is aborted
			loaded, err := b.LoadForEventsTx(ctx, tx, []stead.EventRef{{ExecutionID: id, EventID: "ev"}})
			if err != nil {
				t.Fatal(err)
			}
			mustCommit(t, s, exe.Clone(), stead.Bundle{}) // after the transaction's snapshot
			err = tt.commit(tx, loaded[0].Execution)
			if !errors.Is(err, stead.ErrConflict) {
				t.Fatalf("err = %v, want ErrConflict", err)
			}
		})
	}
}

// LoadForEventsQuery with its arrays as SQL expressions loads what LoadForEventsTx loads, each
// execution's record once and every ref its own copy; ScanLoaded refuses bad refs, and a
// statement that leaves a ref without its row (which would read as a missing execution).
func TestLoadForEventsQuery(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	b := backend(t, s)
	ctx := context.Background()
	mustCommit(t, s, newExe("a"), stead.Bundle{ProcessedEventID: "a1"})
	refs := []stead.EventRef{{ExecutionID: "a", EventID: "a1"}, {ExecutionID: "a", EventID: "a2"}, {ExecutionID: "none", EventID: "n1"}}
	query := func(ids, events, first string) pgx.Rows {
		t.Helper()
		rows, err := b.Pool().Query(ctx, b.LoadForEventsQuery(ids, events, first))
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	got, err := b.ScanLoaded(query(`ARRAY['a','a','none']`, `ARRAY['a1','a2','n1']`, `ARRAY[true,false,true]`), refs)
	if err != nil || len(got) != 3 {
		t.Fatalf("scan: %+v %v", got, err)
	}
	if got[0].Execution == nil || got[1].Execution == nil || got[0].Execution == got[1].Execution ||
		got[1].Execution.Version != got[0].Execution.Version || !got[0].Processed || got[1].Processed ||
		got[2].Execution != nil || got[2].Processed {
		t.Fatalf("loaded %+v, %+v, %+v", got[0], got[1], got[2])
	}
	if _, err := b.ScanLoaded(query(`ARRAY['a']`, `ARRAY['a1']`, `ARRAY[true]`), refs); err == nil {
		t.Fatal("a load that answered for one ref of three succeeded")
	}
	if _, err := b.ScanLoaded(query(`ARRAY['a']`, `ARRAY['']`, `ARRAY[true]`), []stead.EventRef{{ExecutionID: "a"}}); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("scan of a ref without an event: %v, want ErrInvalid", err)
	}
}
