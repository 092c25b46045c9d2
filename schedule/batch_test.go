package schedule_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/schedule"
)

// batchStarter is starter as a BatchStarter, failing a whole batch when told to.
type batchStarter struct {
	*starter
	fail error
}

func (b *batchStarter) StartBatch(ctx context.Context, starts []schedule.Start) ([]bool, error) {
	if b.fail != nil {
		return nil, b.fail
	}
	exist := make([]bool, len(starts))
	for i, s := range starts {
		_, err := b.Create(ctx, s.DefinitionID, s.ID, s.Context)
		exist[i] = err == nil || errors.Is(err, stead.ErrAlreadyExists)
	}
	return exist, nil
}

// TestBatchedRunner runs catch-up, overlap and a failed batch through the batched path.
func TestBatchedRunner(t *testing.T) {
	f := newFixture(t)
	bs := &batchStarter{starter: f.st}
	f.runner.Starter = bs
	f.create(t, schedule.Schedule{ID: "all", Every: time.Minute, CatchUp: schedule.All, CatchUpWindow: 150 * time.Second, Overlap: schedule.AllowAll})
	f.create(t, schedule.Schedule{ID: "skip", Every: time.Minute})
	f.at(t, 60*time.Minute+30*time.Second)
	want := append(tickIDs("all", 58*time.Minute, 59*time.Minute, 60*time.Minute), tickIDs("skip", 60*time.Minute)...)
	got := f.st.created()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("created %v, want %v", got, want)
	}
	// skip's execution still runs: its next tick is dropped; a failed batch claims nothing.
	bs.fail = stead.ErrUnavailable
	f.clock.Set(t0.Add(61 * time.Minute))
	if _, err := f.runner.RunOnce(context.Background()); !errors.Is(err, stead.ErrUnavailable) {
		t.Fatalf("RunOnce with a failing batch: %v", err)
	}
	if sc, _ := f.store.Get(context.Background(), "all"); !sc.NextTick.Equal(t0.Add(61 * time.Minute)) {
		t.Fatalf("a tick whose start failed was claimed: next %v", sc.NextTick.Sub(t0))
	}
	if sc, _ := f.store.Get(context.Background(), "skip"); !sc.NextTick.Equal(t0.Add(62 * time.Minute)) {
		t.Fatalf("skip's dropped tick was not claimed: next %v", sc.NextTick.Sub(t0))
	}
	bs.fail = nil
	f.at(t, 61*time.Minute)
	if got := f.st.created(); !slices.Contains(got, schedule.ExecutionID("all", t0.Add(61*time.Minute))) || len(got) != 5 {
		t.Fatalf("after the batch recovered: %v", got)
	}
}
