package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/schedule"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/worker"
)

// TestClientSchedules: a client reaches its store's schedules to make and change them at runtime.
func TestClientSchedules(t *testing.T) {
	ctx := context.Background()
	client := &worker.Client{Store: memstore.New(), Transport: memtransport.New()}
	s, err := client.Schedules()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, schedule.Schedule{ID: "nightly", DefinitionID: "report", Every: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Modify(ctx, "nightly", func(sc *schedule.Schedule) error { sc.Every = 2 * time.Hour; return nil }); err != nil {
		t.Fatal(err)
	}
	if sc, err := s.Get(ctx, "nightly"); err != nil || sc.Every != 2*time.Hour {
		t.Fatalf("Get = %+v, %v", sc, err)
	}
	if err := s.Delete(ctx, "nightly"); err != nil {
		t.Fatal(err)
	}
}
