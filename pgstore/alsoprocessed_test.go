package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/pgstore"
)

// sent counts what the store sends: statements on their own and batches, each one round trip
// once its statements are prepared.
type sent struct {
	mu      sync.Mutex
	queries []string   // statements sent on their own
	batches [][]string // the statements of each batch
}

func (s *sent) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries = append(s.queries, d.SQL)
	return ctx
}

func (s *sent) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *sent) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sqls []string
	for _, q := range d.Batch.QueuedQueries {
		sqls = append(sqls, q.SQL)
	}
	s.batches = append(s.batches, sqls)
	return ctx
}

func (s *sent) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (s *sent) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// take returns what was sent since the last take, each statement by its name in Statements.
func (s *sent) take(names map[string]string) (queries []string, batches [][]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := func(sql string) string {
		for n, text := range names {
			if text == sql {
				return n
			}
		}
		return sql
	}
	for _, q := range s.queries {
		queries = append(queries, name(q))
	}
	for _, b := range s.batches {
		var ns []string
		for _, q := range b {
			ns = append(ns, name(q))
		}
		batches = append(batches, ns)
	}
	s.queries, s.batches = nil, nil
	return queries, batches
}

// tracedStore returns a store on a pool that records what it sends.
func tracedStore(t *testing.T) (*stead.Store, *sent) {
	t.Helper()
	pgdbtest.Pool(t) // skips when there is no server
	cfg, err := pgxpool.ParseConfig(pgdbtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	tr := &sent{}
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return newStoreOn(t, pool), tr
}

// TestAlsoProcessedCost checks what a commit sends: without AlsoProcessed exactly what it sent
// before (one statement), with it the commit and sqlCommitAlso in one batch, one round trip.
func TestAlsoProcessedCost(t *testing.T) {
	t.Parallel()
	s, tr := tracedStore(t)
	ctx := context.Background()
	b := backend(t, s)
	names := pgstore.Statements(b.Schema())
	also := []string{"e1", "e2", "e3"}
	emit := []stead.Emit{{Target: "x", Event: stead.Event{ID: "o", Kind: "K"}}}
	type call struct {
		name    string
		run     func(t *testing.T, round int)
		queries []string
		batches [][]string
	}
	exes := map[string]*stead.Execution{}
	exe := func(name string, round int) *stead.Execution {
		id := fmt.Sprintf("%s-%d", name, round)
		if exes[id] == nil {
			exes[id] = newExe(id)
		}
		return exes[id]
	}
	commit := func(name string, bd stead.Bundle) func(*testing.T, int) {
		return func(t *testing.T, round int) {
			e := exe(name, round)
			c, err := s.Commit(ctx, e, bd)
			if err != nil {
				t.Fatalf("Commit %s: %v", name, err)
			}
			e.Version = c.Version
		}
	}
	batch := func(name string, bd stead.Bundle) func(*testing.T, int) {
		return func(t *testing.T, round int) {
			items := []stead.CommitItem{{Execution: exe(name+"-1", round), Bundle: bd}, {Execution: exe(name+"-2", round)}}
			res, err := s.CommitBatch(ctx, items)
			if err != nil || res[0].Err != nil || res[1].Err != nil {
				t.Fatalf("CommitBatch %s: %+v, %v", name, res, err)
			}
			for i := range items {
				items[i].Execution.Version = res[i].Version
			}
		}
	}
	lost := func(t *testing.T, round int) {
		e := exe("lost", round).Clone()
		e.Version = 5
		if _, err := s.Commit(ctx, e, stead.Bundle{ProcessedEventID: "e0", AlsoProcessed: also}); !errors.Is(err, stead.ErrConflict) {
			t.Fatalf("stale Commit: %v", err)
		}
	}
	calls := []call{
		{"state only", commit("state", stead.Bundle{ProcessedEventID: "e0"}), []string{"CommitState"}, nil},
		{"state only, also", commit("state-also", stead.Bundle{ProcessedEventID: "e0", AlsoProcessed: also}),
			nil, [][]string{{"CommitState", "CommitAlso"}}},
		{"bundle", commit("bundle", stead.Bundle{ProcessedEventID: "e0", Emits: emit}), []string{"CommitBundle"}, nil},
		{"bundle, also", commit("bundle-also", stead.Bundle{ProcessedEventID: "e0", AlsoProcessed: also, Emits: emit}),
			nil, [][]string{{"CommitBundle", "CommitAlso"}}},
		{"batch", batch("batch", stead.Bundle{ProcessedEventID: "e0"}), []string{"CommitBatch"}, nil},
		{"batch, also", batch("batch-also", stead.Bundle{ProcessedEventID: "e0", AlsoProcessed: also}),
			nil, [][]string{{"CommitBatch", "CommitAlso"}}},
		{"lost, also", lost, []string{"Conflicts"}, [][]string{{"CommitState", "CommitAlso"}}},
	}
	// Round 0 prepares the statements (pgx describes each once per connection); round 1 is what
	// every later call costs.
	for round := range 2 {
		for _, c := range calls {
			tr.take(nil)
			c.run(t, round)
			queries, batches := tr.take(names)
			if round == 0 {
				continue
			}
			if fmt.Sprint(queries) != fmt.Sprint(c.queries) || fmt.Sprint(batches) != fmt.Sprint(c.batches) {
				t.Errorf("%s sent statements %v and batches %v, want %v and %v", c.name, queries, batches, c.queries, c.batches)
			}
		}
	}
	for _, id := range []string{"state-also-1", "bundle-also-1", "batch-also-1-1"} {
		for _, ev := range append([]string{"e0"}, also...) {
			if ok, err := s.IsProcessed(ctx, id, ev); err != nil || !ok {
				t.Errorf("IsProcessed(%s, %s) = %v, %v; want true", id, ev, ok, err)
			}
		}
	}
}

// alsoBundle is a bundle of a step that applied the events tag-0 to tag-(n-1).
func alsoBundle(tag string, n int) stead.Bundle {
	b := stead.Bundle{ProcessedEventID: tag + "-0"}
	for i := 1; i < n; i++ {
		b.AlsoProcessed = append(b.AlsoProcessed, fmt.Sprintf("%s-%d", tag, i))
	}
	return b
}

// processedCount reports how many of the events of b s recorded for id.
func processedCount(t *testing.T, s *stead.Store, id string, b stead.Bundle) int {
	t.Helper()
	n := 0
	for _, ev := range append([]string{b.ProcessedEventID}, b.AlsoProcessed...) {
		ok, err := s.IsProcessed(context.Background(), id, ev)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			n++
		}
	}
	return n
}

// TestAlsoProcessedCommitBatchTx commits AlsoProcessed in the caller's transaction: recorded
// when it commits, gone when it rolls back, recorded in a savepoint too (where the statement
// behind the commit cannot see the win, so the store records the events with one more), and
// refused when the transaction had written the same version before.
func TestAlsoProcessedCommitBatchTx(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	b := backend(t, s)
	ctx := context.Background()
	stored := newExe("stored")
	mustCommit(t, s, stored, stead.Bundle{})

	for _, tc := range []struct {
		name      string
		savepoint bool
		commit    bool
	}{
		{"rolled_back", false, false},
		{"committed", false, true},
		{"savepoint_rolled_back", true, false},
		{"savepoint_committed", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur, err := s.Load(ctx, "stored")
			if err != nil {
				t.Fatal(err)
			}
			fresh := newExe("fresh-" + tc.name)
			plain := newExe("plain-" + tc.name)
			items := []stead.CommitItem{
				{Execution: cur, Bundle: alsoBundle("stored-"+tc.name, 16)},
				{Execution: fresh, Bundle: alsoBundle("fresh-"+tc.name, 3)},
				{Execution: plain, Bundle: stead.Bundle{ProcessedEventID: "plain"}},
				{Execution: newExe("stale-" + tc.name).Clone(), Bundle: alsoBundle("stale-"+tc.name, 4)},
			}
			items[3].Execution.Version = 7 // no such row: it loses
			tx, err := b.Pool().Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck // ends the transaction if the test fails
			q := tx
			if tc.savepoint {
				if q, err = tx.Begin(ctx); err != nil {
					t.Fatal(err)
				}
			}
			res, err := b.CommitBatchTx(ctx, q, items)
			if err != nil || res[0].Err != nil || res[1].Err != nil || res[2].Err != nil || !errors.Is(res[3].Err, stead.ErrConflict) {
				t.Fatalf("CommitBatchTx = %+v, %v", res, err)
			}
			if tc.savepoint {
				if err := q.Commit(ctx); err != nil { // releases the savepoint
					t.Fatal(err)
				}
			}
			if tc.commit {
				err = tx.Commit(ctx)
			} else {
				err = tx.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[bool][3]int{true: {16, 3, 1}, false: {0, 0, 0}}[tc.commit]
			for i, n := range want {
				if got := processedCount(t, s, items[i].Execution.ID, items[i].Bundle); got != n {
					t.Errorf("item %d: %d of its events recorded, want %d", i, got, n)
				}
			}
			if got := processedCount(t, s, items[3].Execution.ID, items[3].Bundle); got != 0 {
				t.Errorf("the lost item recorded %d events", got)
			}
		})
	}

	// A transaction that commits one version twice, first without further events (so the row is
	// left at the version a commit function writes) and then with them: the second commit loses,
	// and since the transaction wrote that version itself, its events would be recorded; the
	// store says so.
	cur, err := s.Load(ctx, "stored")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := b.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the point is to roll back
	if res, err := b.CommitBatchTx(ctx, tx, []stead.CommitItem{{Execution: cur, Bundle: alsoBundle("twice-a", 1)}}); err != nil || res[0].Err != nil {
		t.Fatalf("first commit: %+v, %v", res, err)
	}
	_, err = b.CommitBatchTx(ctx, tx, []stead.CommitItem{{Execution: cur, Bundle: alsoBundle("twice-b", 2)}})
	if err == nil || !strings.Contains(err.Error(), "roll back") {
		t.Fatalf("second commit of the same version with AlsoProcessed: %v, want an error asking for a rollback", err)
	}
}

// TestAlsoProcessedQueueCommit queues guarded commits with AlsoProcessed: the statement that
// records them goes right behind the commit (and before the guard); a won commit records them
// all, a lost one none, and a commit queued in a savepoint fails the batch rather than leave them
// unrecorded.
func TestAlsoProcessedQueueCommit(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	b := backend(t, s)
	ctx := context.Background()
	exe := newExe("q")
	mustCommit(t, s, exe, stead.Bundle{})
	names := pgstore.Statements(b.Schema())
	exe.Version = 1

	want := []string{"CommitState", "CommitAlso", "RequireCommitted"}
	send := func(e *stead.Execution, bd stead.Bundle, res *stead.CommitResult, savepoint bool) error {
		tx, err := b.Pool().Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx) //nolint:errcheck // ends an aborted transaction
		q := tx
		if savepoint {
			if q, err = tx.Begin(ctx); err != nil {
				return err
			}
		}
		batch := &pgx.Batch{}
		if err := b.QueueCommitGuarded(batch, e, bd, res); err != nil {
			return err
		}
		var got []string
		for _, qq := range batch.QueuedQueries {
			for n, text := range names {
				if text == qq.SQL {
					got = append(got, n)
				}
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("queued %v, want %v", got, want)
		}
		if err := q.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	const tag = "guarded"

	won := alsoBundle(tag+"-won", 16)
	var res stead.CommitResult
	// One version per event applied.
	if err := send(exe, won, &res, false); err != nil || res.Err != nil || res.Version != exe.Version+16 {
		t.Fatalf("%s: won commit: %v, %+v", tag, err, res)
	}
	if n := processedCount(t, s, "q", won); n != 16 {
		t.Fatalf("%s: the won commit recorded %d of its 16 events", tag, n)
	}
	stale := exe.Clone()
	exe.Version = res.Version

	lost := alsoBundle(tag+"-lost", 4)
	res = stead.CommitResult{}
	err := send(stale, lost, &res, false)
	if !errors.Is(res.Err, stead.ErrConflict) || err == nil {
		t.Fatalf("%s: lost commit: %v, %+v", tag, err, res)
	}
	if n := processedCount(t, s, "q", lost); n != 0 {
		t.Fatalf("%s: the lost commit recorded %d events", tag, n)
	}

	inSavepoint := alsoBundle(tag+"-savepoint", 2)
	res = stead.CommitResult{}
	if err := send(exe, inSavepoint, &res, true); err == nil {
		t.Fatalf("%s: a commit with AlsoProcessed queued in a savepoint committed: %+v", tag, res)
	}
	if n := processedCount(t, s, "q", inSavepoint); n != 0 {
		t.Fatalf("%s: the refused savepoint commit recorded %d events", tag, n)
	}
	if got, err := s.Load(ctx, "q"); err != nil || got.Version != exe.Version {
		t.Fatalf("%s: after the refused savepoint commit the execution is at %v (%v), want %d", tag, got, err, exe.Version)
	}
	// Without AlsoProcessed a queued commit is the commit and its guard.
	batch := &pgx.Batch{}
	res = stead.CommitResult{}
	if err := b.QueueCommitGuarded(batch, exe, stead.Bundle{ProcessedEventID: "x"}, &res); err != nil || batch.Len() != 2 {
		t.Fatalf("QueueCommitGuarded without AlsoProcessed queued %d statements (%v), want 2", batch.Len(), err)
	}
}
