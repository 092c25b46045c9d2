package schedworker_test

import (
	"context"
	"testing"

	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/schedule"
	"github.com/steadhq/stead/schedule/schedworker"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/worker"
)

// TestStartBatchCountsTakenIDsAsExisting: a tick whose execution exists (fired by another
// runner) is as good as started; the others are created.
func TestStartBatchCountsTakenIDsAsExisting(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	s := schedworker.Starter{Client: &worker.Client{Store: store, Transport: memtransport.New()}}
	if _, err := s.Create(ctx, "d", "s@1", nil); err != nil {
		t.Fatal(err)
	}
	exist, err := s.StartBatch(ctx, []schedule.Start{{DefinitionID: "d", ID: "s@1"}, {DefinitionID: "d", ID: "s@2"}})
	if err != nil || len(exist) != 2 || !exist[0] || !exist[1] {
		t.Fatalf("StartBatch: %v %v", exist, err)
	}
	if _, err := store.Load(ctx, "s@2"); err != nil {
		t.Fatal(err)
	}
	exist, err = s.StartBatch(ctx, []schedule.Start{{DefinitionID: "d", ID: "s@1"}, {DefinitionID: "d", ID: "s@2"}})
	if err != nil || !exist[0] || !exist[1] {
		t.Fatalf("StartBatch of taken ids only: %v %v", exist, err)
	}
}
