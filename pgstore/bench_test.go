package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/pgbenchwork"
	"github.com/steadhq/stead/pgdb"
)

// Run with, for example:
//
//	go test -run '^$' -bench . -benchtime 2s -count 5 ./pgstore/
//
// bench/pgstore measures the same operations against pgbench running the same SQL.

// fanOut runs b.N calls of fn spread over callers goroutines; worker is 0..callers-1.
func fanOut(b *testing.B, callers int, fn func(worker, i int) error) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	b.ResetTimer()
	for w := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N || failed.Load() != nil {
					return
				}
				if err := fn(w, i); err != nil {
					failed.Store(&err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if p := failed.Load(); p != nil {
		b.Fatal(*p)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

var callerCounts = []int{1, 8}

// benchStore returns a store on a pool of callers connections.
func benchStore(b *testing.B, callers int) *stead.Store {
	return newStoreOn(b, openPool(b, pgdb.Config{MaxConns: int32(callers)}))
}

// commit commits exe and moves it to its new version, for the next commit of the same caller.
func commit(s *stead.Store, exe *stead.Execution, bundle stead.Bundle) error {
	c, err := s.Commit(context.Background(), exe, bundle)
	if err == nil {
		exe.Version = c.Version
	}
	return err
}

func BenchmarkCommitStateOnly(b *testing.B) {
	for _, callers := range callerCounts {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			s := benchStore(b, callers)
			exes := pgbenchwork.Executions("w", callers)
			fanOut(b, callers, func(w, i int) error {
				exes[w].UpdatedAt = time.Now()
				return commit(s, exes[w], stead.Bundle{ProcessedEventID: fmt.Sprint("ev", i)})
			})
		})
	}
}

// BenchmarkCommitComplex: 2 emits + dedupe + 1 timer + trace, one statement, one round-trip.
func BenchmarkCommitComplex(b *testing.B) {
	for _, callers := range callerCounts {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			s := benchStore(b, callers)
			exes := pgbenchwork.Executions("w", callers)
			fanOut(b, callers, func(w, i int) error {
				return commit(s, exes[w], pgbenchwork.ComplexBundle(i))
			})
		})
	}
}

// BenchmarkCommitComplexPerStatement sends the same bundle one statement per round-trip inside
// BEGIN/COMMIT, for a side-by-side comparison with BenchmarkCommitComplex.
func BenchmarkCommitComplexPerStatement(b *testing.B) {
	for _, callers := range callerCounts {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			s := benchStore(b, callers)
			exes := pgbenchwork.Executions("w", callers)
			for _, e := range exes {
				if err := commit(s, e, stead.Bundle{}); err != nil {
					b.Fatal(err)
				}
			}
			pb := backend(b, s)
			q := pgdb.Qualifier(pb.Schema())
			fanOut(b, callers, func(w, i int) error {
				return pgbenchwork.PerStatementCommit(context.Background(), pb.Pool(), q, exes[w], pgbenchwork.ComplexBundle(i), 200)
			})
		})
	}
}

func BenchmarkLoadForEvent(b *testing.B) {
	for _, callers := range callerCounts {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			s := benchStore(b, callers)
			for i := range callers {
				if _, err := s.Commit(context.Background(), pgbenchwork.Execution(fmt.Sprint("w", i)), stead.Bundle{ProcessedEventID: "seen"}); err != nil {
					b.Fatal(err)
				}
			}
			fanOut(b, callers, func(w, i int) error {
				_, _, err := s.LoadForEvent(context.Background(), fmt.Sprint("w", w), "seen")
				return err
			})
		})
	}
}

// BenchmarkList pages through 20,000 executions: the first page and one 100 pages deep.
func BenchmarkList(b *testing.B) {
	s := newStore(b)
	pb := backend(b, s)
	ctx := context.Background()
	if _, err := pb.Pool().Exec(ctx, `INSERT INTO `+pgdb.Qualifier(pb.Schema())+`stead_executions
		(id, definition_id, status, active_path, version, data)
		SELECT format('exe-%s', lpad(g::text, 8, '0')), 'order', 'running', 'a.b', 1, '{}'
		FROM generate_series(1, 20000) g`); err != nil {
		b.Fatal(err)
	}
	if _, err := pb.Pool().Exec(ctx, `ANALYZE `+pgdb.Qualifier(pb.Schema())+`stead_executions`); err != nil {
		b.Fatal(err)
	}
	f := stead.ListFilter{DefinitionID: "order", Limit: 100}
	deep := f
	for range 100 {
		p, err := s.List(ctx, deep)
		if err != nil {
			b.Fatal(err)
		}
		deep.Cursor = p.NextCursor
	}
	for _, c := range []struct {
		name string
		f    stead.ListFilter
	}{{"page=1", f}, {"page=101", deep}} {
		b.Run(c.name, func(b *testing.B) {
			fanOut(b, 1, func(_, _ int) error {
				p, err := s.List(ctx, c.f)
				if err == nil && len(p.Items) != 100 {
					err = fmt.Errorf("page of %d", len(p.Items))
				}
				return err
			})
		})
	}
}

// BenchmarkCommitBatch100 commits 100 state-only steps per call; steps/s is the figure to read.
func BenchmarkCommitBatch100(b *testing.B) {
	for _, callers := range callerCounts {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			s := benchStore(b, callers)
			batches := make([][]stead.CommitItem, callers)
			for w := range batches {
				for j := range 100 {
					batches[w] = append(batches[w], stead.CommitItem{Execution: pgbenchwork.Execution(fmt.Sprintf("w%d-%d", w, j))})
				}
			}
			fanOut(b, callers, func(w, i int) error {
				for j := range batches[w] {
					batches[w][j].Bundle.ProcessedEventID = fmt.Sprint("ev", i)
				}
				res, err := s.CommitBatch(context.Background(), batches[w])
				for j, r := range res {
					if err == nil {
						err = r.Err
					}
					batches[w][j].Execution.Version = r.Version
				}
				return err
			})
			b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}

// BenchmarkCommitBatch100Complex commits 100 steps per call, each with the bundle of
// BenchmarkCommitComplex (2 emits, dedupe, a timer, a trace step).
func BenchmarkCommitBatch100Complex(b *testing.B) {
	s := benchStore(b, 1)
	var batch []stead.CommitItem
	for j := range 100 {
		batch = append(batch, stead.CommitItem{Execution: pgbenchwork.Execution(fmt.Sprint("c", j))})
	}
	fanOut(b, 1, func(_, i int) error {
		for j := range batch {
			batch[j].Bundle = pgbenchwork.ComplexBundle(i*100 + j)
		}
		res, err := s.CommitBatch(context.Background(), batch)
		for j, r := range res {
			if err == nil {
				err = r.Err
			}
			batch[j].Execution.Version = r.Version
		}
		return err
	})
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "steps/s")
}

// BenchmarkClaimOutbox claims 100 rows and acknowledges them, with 1,000 or 100,000 pending
// (the harness goes to 1,000,000); the refill that keeps the backlog constant is not timed.
func BenchmarkClaimOutbox(b *testing.B) {
	for _, pending := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("pending=%d", pending), func(b *testing.B) {
			s := newStore(b)
			pb := backend(b, s)
			ctx := context.Background()
			q := pgdb.Qualifier(pb.Schema())
			fill := func(n int) error {
				_, err := pb.Pool().Exec(ctx, `INSERT INTO `+q+`stead_outbox (source_id, target_id, event)
					SELECT 'src', 'dst', '{"id":"e","kind":"K"}' FROM generate_series(1, $1::int)`, n)
				return err
			}
			if err := fill(pending); err != nil {
				b.Fatal(err)
			}
			if _, err := pb.Pool().Exec(ctx, `VACUUM ANALYZE `+q+`stead_outbox`); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				got, err := s.ClaimOutbox(ctx, time.Now(), time.Minute, 100)
				if err != nil || len(got) != 100 {
					b.Fatalf("claimed %d: %v", len(got), err)
				}
				b.StopTimer()
				seqs := make([]int64, len(got))
				for i, e := range got {
					seqs[i] = e.Seq
				}
				if err := s.AckOutbox(ctx, seqs); err != nil {
					b.Fatal(err)
				}
				if err := fill(100); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
