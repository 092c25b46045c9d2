package worker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/worker"
)

// Create checks a start context against the definition's declared keys before writing anything,
// and stores it with the defaults set.
func TestCreateChecksTheDeclaredContext(t *testing.T) {
	ctx := context.Background()
	store, tr := memstore.New(), memtransport.New()
	defer store.Close()
	defer tr.Close()
	def, err := chart.Parse("typed.yaml", []byte(`
id: typed
context:
  order_id: {type: string, required: true}
  amount: {type: number, default: 0}
initial: a
states: {a: {}}
`))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := chart.NewEngine(def, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &worker.Client{Store: store, Transport: tr, Known: worker.Machines{def.ID: eng}}
	tests := []struct {
		id, ctx string
		want    string
	}{
		{"missing", `{"amount":1}`, ""},
		{"wrong", `{"order_id":1}`, ""},
		{"extra", `{"order_id":"o","x":1}`, ""},
		{"good", `{"order_id":"o"}`, `{"amount":0,"order_id":"o"}`},
	}
	for _, tt := range tests {
		exe, err := client.Create(ctx, "typed", tt.id, []byte(tt.ctx))
		if tt.want == "" {
			if !errors.Is(err, stead.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", tt.id, err)
			}
			if _, err := store.Load(ctx, tt.id); !errors.Is(err, stead.ErrNotFound) {
				t.Errorf("%s: refused, yet stored (%v)", tt.id, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.id, err)
		}
		if string(exe.Context) != tt.want {
			t.Fatalf("%s: created with %s, want %s", tt.id, exe.Context, tt.want)
		}
	}
}
