package memstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/memstore"
)

func benchExe(id string) *stead.Execution {
	return &stead.Execution{
		ID: id, DefinitionID: "bench", Status: stead.StatusRunning, ActivePath: "main/waiting",
		Context: json.RawMessage(`{"count":1,"customer":"c-42","items":[1,2,3]}`),
	}
}

// BenchmarkCommitStateOnly is the cost of one step that only moves the state (plus a dedupe
// marker): checking and normalising, encoding the record, and the CAS.
func BenchmarkCommitStateOnly(b *testing.B) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	exe := benchExe("e")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c, err := s.Commit(ctx, exe, stead.Bundle{ProcessedEventID: "ev"})
		if err != nil {
			b.Fatal(err)
		}
		exe.Version = c.Version
	}
}

// BenchmarkCommitComplex is a small full step: one emit, a processed marker, one timer re-armed
// and a trace step.
func BenchmarkCommitComplex(b *testing.B) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	exe := benchExe("e")
	at := time.Now()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ev := fmt.Sprintf("ev-%d", i)
		c, err := s.Commit(ctx, exe, stead.Bundle{
			Emits:            []stead.Emit{{Target: "other", Event: stead.Event{ID: ev, Kind: "Ping", Data: json.RawMessage(`{"n":1}`)}}},
			ProcessedEventID: ev,
			Timers:           []stead.TimerOp{{Action: stead.TimerSchedule, Path: "main/waiting", FireAt: at}},
			Trace:            &stead.TraceStep{EventID: ev, EventKind: "Ping", From: "a", To: "b"},
		})
		if err != nil {
			b.Fatal(err)
		}
		exe.Version = c.Version
	}
}

// BenchmarkCommitStateOnlyParallel commits distinct executions from every P: the single mutex is
// the ceiling.
func BenchmarkCommitStateOnlyParallel(b *testing.B) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		exe := benchExe(fmt.Sprintf("e-%d", n.Add(1)))
		for pb.Next() {
			v, err := s.Save(ctx, exe)
			if err != nil {
				b.Error(err)
				return
			}
			exe.Version = v
		}
	})
}
