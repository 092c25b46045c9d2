package sqlitestore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
)

// benchExe is a typical record: a running execution with a small context and history (about
// 400 bytes encoded).
func benchExe(id string) *stead.Execution {
	return &stead.Execution{
		ID: id, DefinitionID: "order", Status: stead.StatusRunning, ActivePath: "order/paying/awaiting",
		History:   map[string]string{"order": "order/paying", "order/paying": "order/paying/awaiting"},
		Context:   json.RawMessage(`{"order_id":"A-1029","amount":4999,"currency":"EUR","items":[{"sku":"x","n":2},{"sku":"y","n":1}],"attempts":0}`),
		CreatedAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
		UpdatedAt: time.Date(2030, 1, 1, 0, 0, 1, 0, time.UTC),
	}
}

var syncLevels = []sqlitedb.Synchronous{sqlitedb.SyncNormal, sqlitedb.SyncFull}

func benchStore(b *testing.B, level sqlitedb.Synchronous) *stead.Store {
	b.Helper()
	return newStore(b, openDB(b, sqlitedb.Config{Path: filepath.Join(b.TempDir(), "bench.db"), Synchronous: level}))
}

// BenchmarkCommitStateOnly commits one execution over and over with nothing but the record (and,
// in the Dedupe variant, the processed-event marker a worker writes with every step).
func BenchmarkCommitStateOnly(b *testing.B) {
	for _, level := range syncLevels {
		for _, dedupe := range []bool{false, true} {
			name := string(level) + "/Record"
			if dedupe {
				name = string(level) + "/Dedupe"
			}
			b.Run(name, func(b *testing.B) {
				s := benchStore(b, level)
				exe := benchExe("e")
				ctx := b.Context()
				b.ReportAllocs()
				cpu := sqlitestore.StartCPU()
				for i := 0; b.Loop(); i++ {
					var bd stead.Bundle
					if dedupe {
						bd.ProcessedEventID = fmt.Sprintf("ev-%d", i)
					}
					c, err := s.Commit(ctx, exe, bd)
					if err != nil {
						b.Fatal(err)
					}
					exe.Version = c.Version
				}
				cpu.Report(b)
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
			})
		}
	}
}

// BenchmarkCommitComplex commits a step with every side effect: two emits, the marker, a spawn,
// a timer and a trace step.
func BenchmarkCommitComplex(b *testing.B) {
	for _, level := range syncLevels {
		b.Run(string(level), func(b *testing.B) {
			s := benchStore(b, level)
			exe := benchExe("e")
			ctx := b.Context()
			at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			b.ReportAllocs()
			cpu := sqlitestore.StartCPU()
			for i := 0; b.Loop(); i++ {
				tag := fmt.Sprint(i)
				c, err := s.Commit(ctx, exe, stead.Bundle{
					Emits: []stead.Emit{
						{Target: "parent", Event: stead.Event{ID: "a" + tag, Kind: "Finished", Data: json.RawMessage(`{"ok":true}`)}},
						{Target: "e", Event: stead.Event{ID: "b" + tag, Kind: "Next"}},
					},
					ProcessedEventID: "p" + tag,
					Spawns:           []stead.Spawn{{ChildID: "e:r:" + tag, RootPath: "order/par/a", Context: json.RawMessage(`{"seed":1}`)}},
					Timers:           []stead.TimerOp{{Action: stead.TimerSchedule, Path: "order/paying", FireAt: at.Add(time.Duration(i) * time.Second)}},
					Trace:            &stead.TraceStep{EventID: "p" + tag, EventKind: "Pay", From: "a", To: "b", Actions: []string{"charge"}},
				})
				if err != nil {
					b.Fatal(err)
				}
				exe.Version = c.Version
			}
			cpu.Report(b)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}

// BenchmarkCommitParallel has many goroutines commit state-only steps to their own executions:
// they queue on the database's write gate.
func BenchmarkCommitParallel(b *testing.B) {
	s := benchStore(b, sqlitedb.SyncNormal)
	ctx := b.Context()
	var n atomic.Int64
	b.ReportAllocs()
	cpu := sqlitestore.StartCPU()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		exe := benchExe(fmt.Sprintf("p%d", n.Add(1)))
		for pb.Next() {
			c, err := s.Commit(ctx, exe, stead.Bundle{})
			if err != nil {
				b.Error(err)
				return
			}
			exe.Version = c.Version
		}
	})
	cpu.Report(b)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}

// BenchmarkCommitBatch commits 100 executions, one state-only step each, per CommitBatch.
func BenchmarkCommitBatch(b *testing.B) {
	for _, level := range syncLevels {
		b.Run(string(level)+"/100", func(b *testing.B) {
			s := benchStore(b, level)
			ctx := b.Context()
			items := make([]stead.CommitItem, 100)
			for i := range items {
				items[i].Execution = benchExe(fmt.Sprintf("b%03d", i))
			}
			b.ReportAllocs()
			cpu := sqlitestore.StartCPU()
			for i := 0; b.Loop(); i++ {
				for j := range items {
					items[j].Bundle.ProcessedEventID = fmt.Sprintf("ev-%d", i)
				}
				res, err := s.CommitBatch(ctx, items)
				if err != nil {
					b.Fatal(err)
				}
				for j, r := range res {
					if r.Err != nil {
						b.Fatal(r.Err)
					}
					items[j].Execution.Version = r.Version
				}
			}
			cpu.Report(b)
			b.ReportMetric(float64(b.N*len(items))/b.Elapsed().Seconds(), "commits/s")
		})
	}
}

// seed commits n executions of two definitions and four statuses, a third of them children.
func seed(b *testing.B, s *stead.Store, n int) {
	b.Helper()
	statuses := []stead.Status{stead.StatusRunning, stead.StatusDone, stead.StatusSuspended, stead.StatusFailed}
	for start := 0; start < n; start += stead.MaxBatch {
		var items []stead.CommitItem
		for i := start; i < min(n, start+stead.MaxBatch); i++ {
			e := benchExe(fmt.Sprintf("x%07d", i))
			e.Status = statuses[i%len(statuses)]
			if i%2 == 1 {
				e.DefinitionID = "refund"
			}
			if i%3 == 2 {
				e.ParentID = fmt.Sprintf("x%07d", i-1)
			}
			items = append(items, stead.CommitItem{Execution: e, Bundle: stead.Bundle{ProcessedEventID: "start"}})
		}
		if _, err := s.CommitBatch(b.Context(), items); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadForEvent loads an execution with its dedupe answer, from a store of 10,000, with
// a cancellable context as a worker has.
func BenchmarkLoadForEvent(b *testing.B) {
	s := benchStore(b, sqlitedb.SyncNormal)
	seed(b, s, 10_000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	cpu := sqlitestore.StartCPU()
	for i := 0; b.Loop(); i++ {
		if _, _, err := s.LoadForEvent(ctx, fmt.Sprintf("x%07d", (i*7919)%10_000), "start"); err != nil {
			b.Fatal(err)
		}
	}
	cpu.Report(b)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "loads/s")
}

// BenchmarkListPage reads one page of 100 summaries from 20,000 executions, near the start and
// deep into the listing: keyset paging makes both cost the same.
func BenchmarkListPage(b *testing.B) {
	s := benchStore(b, sqlitedb.SyncNormal)
	seed(b, s, 20_000)
	filters := map[string]stead.ListFilter{
		"All":                {Limit: 100},
		"Definition":         {DefinitionID: "order", Limit: 100},
		"DefinitionStatuses": {DefinitionID: "order", Statuses: []stead.Status{stead.StatusRunning, stead.StatusDone}, Limit: 100},
		"StatusRootsOnly":    {Statuses: []stead.Status{stead.StatusSuspended}, RootsOnly: true, Limit: 100},
	}
	for _, name := range []string{"All", "Definition", "DefinitionStatuses", "StatusRootsOnly"} {
		f := filters[name]
		// Walk to a page about 90% of the way in, to bench a deep cursor.
		deep := f
		for {
			p, err := s.List(b.Context(), deep)
			if err != nil {
				b.Fatal(err)
			}
			if p.NextCursor == "" || p.Items[0].ID > "x0018000" {
				break
			}
			deep.Cursor = p.NextCursor
		}
		for _, c := range []struct {
			depth string
			f     stead.ListFilter
		}{{"First", f}, {"Deep", deep}} {
			b.Run(name+"/"+c.depth, func(b *testing.B) {
				ctx := b.Context()
				b.ReportAllocs()
				cpu := sqlitestore.StartCPU()
				for b.Loop() {
					p, err := s.List(ctx, c.f)
					if err != nil || len(p.Items) == 0 {
						b.Fatal(len(p.Items), err)
					}
				}
				cpu.Report(b)
			})
		}
	}
}
