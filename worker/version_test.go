package worker_test

import (
	"context"
	"testing"

	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/worker"
)

func TestMachinesResolve(t *testing.T) {
	m := worker.Machines{"flow@1": nil, "flow@2": nil, "flow@10": nil, "plain": nil, "other@3": nil}
	tests := []struct{ in, want string }{
		{"flow", "flow@10"}, {"flow@2", "flow@2"}, {"plain", "plain"}, {"other", "other@3"}, {"ghost", "ghost"}, {"flow@7", "flow@7"},
	}
	for _, tt := range tests {
		if got := m.Resolve(tt.in); got != tt.want {
			t.Errorf("Resolve(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// New executions of an unversioned id start on the newest version the client knows; one can
// still ask for an older version by its full id.
func TestCreateStartsOnTheNewestVersion(t *testing.T) {
	ctx := context.Background()
	store, tr := memstore.New(), memtransport.New()
	defer store.Close()
	defer tr.Close()
	machines := worker.Machines{}
	for _, v := range []string{"1", "2"} {
		def, err := chart.Parse("flow.yaml", []byte("id: flow\nversion: "+v+"\ninitial: a\nstates: {a: {}}\n"))
		if err != nil {
			t.Fatal(err)
		}
		eng, err := chart.NewEngine(def, nil)
		if err != nil {
			t.Fatal(err)
		}
		machines[eng.DefinitionID()] = eng
	}
	client := &worker.Client{Store: store, Transport: tr, Known: machines}
	exe, err := client.Create(ctx, "flow", "new", nil)
	if err != nil || exe.DefinitionID != "flow@2" {
		t.Fatalf("created %v on %q, want flow@2", err, exe.DefinitionID)
	}
	exe, err = client.Create(ctx, "flow@1", "old", nil)
	if err != nil || exe.DefinitionID != "flow@1" {
		t.Fatalf("created %v on %q, want flow@1", err, exe.DefinitionID)
	}
}
