package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/steadhq/stead"
)

func TestSmoke(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	exe := &stead.Execution{ID: "a", DefinitionID: "d", Status: stead.StatusRunning, CreatedAt: time.Now()}
	if _, err := s.Commit(ctx, exe, stead.Bundle{ProcessedEventID: "e0"}); err != nil {
		t.Fatal(err)
	}
	seqs, err := s.Commit(ctx, exe, stead.Bundle{
		Emits:            []stead.Emit{{Target: "b", Event: stead.Event{ID: "x", Kind: "K"}}, {Event: stead.Event{ID: "y", Kind: "K"}}},
		ProcessedEventID: "e1",
		Timers:           []stead.TimerOp{{Action: stead.TimerSchedule, Path: "p", FireAt: time.Now()}},
		Trace:            &stead.TraceStep{EventKind: "K"},
		Spawns:           []stead.Spawn{{ChildID: "c1", RootPath: "r"}},
	})
	t.Log(seqs, err, exe.Version)
	stale := exe.Clone()
	stale.Version = 1
	_, err = s.Commit(ctx, stale, stead.Bundle{Trace: &stead.TraceStep{}})
	t.Log(err, stale.Version)
	_, err = s.Commit(ctx, stale, stead.Bundle{})
	t.Log(err, stale.Version)
	got, p, err := s.LoadForEvent(ctx, "a", "e1")
	t.Log(got, p, err)
	tr, err := s.ReadTrace(ctx, "a")
	t.Log(tr, err)
	ob, err := s.ClaimOutbox(ctx, time.Now(), time.Minute, 10)
	t.Log(ob, err)
	pg, err := s.List(ctx, stead.ListFilter{Limit: 1})
	t.Log(pg, err)
	ok, err := s.Purge(ctx, "a", 2)
	t.Log(ok, err)
}
