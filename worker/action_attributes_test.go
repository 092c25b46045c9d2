package worker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/worker"
)

// TestActionsSetAttributesEndToEnd: attributes an action sets in a worker's step are found by
// Store.List's attribute filter once the step committed, on memory, SQLite and PostgreSQL (with
// and without the shared transaction): set, replaced by a later step, deleted, and combined with
// the conditions on other attributes.
func TestActionsSetAttributesEndToEnd(t *testing.T) {
	for _, c := range []backendCase{
		{name: "memory", batch: 16},
		{"sqlite", sqliteSpec, false, 16},
		{"postgres", pgSpec, false, 16},
		{"postgres shared-tx", pgSpec, true, 16},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			b := openControlCase(t, c)
			def, err := chart.Parse("tagged.yaml", []byte(`
id: tagged
context:
  customer: {type: number, required: true}
initial: open
states:
  open:
    entry: [tag]
    on: {pay: paid}
  paid:
    entry: [mark_paid]
    on: {ship: shipped}
  shipped: {final: ok}
`))
			if err != nil {
				t.Fatal(err)
			}
			reg := chart.NewRegistry().
				Action("tag", func(c chart.ActionContext) (chart.ActionResult, error) {
					c.SetAttribute("customer", stead.AttrInt(int64(c.Float("customer"))))
					c.SetAttribute("stage", stead.AttrString("open"))
					return chart.ActionResult{}, nil
				}).
				Action("mark_paid", func(c chart.ActionContext) (chart.ActionResult, error) {
					c.SetAttribute("paid", stead.AttrBool(true))
					c.DeleteAttribute("stage")
					return chart.ActionResult{}, nil
				})
			eng, err := chart.NewEngine(def, reg)
			if err != nil {
				t.Fatal(err)
			}
			machines := worker.Machines{def.ID: eng}
			client := &worker.Client{Store: b.Store, Transport: b.Transport, Known: machines}
			for _, n := range []struct {
				id       string
				customer string
			}{{"a", "42"}, {"b", "42"}, {"c", "7"}} {
				if _, err := client.Create(ctx, "tagged", n.id, []byte(`{"customer":`+n.customer+`}`)); err != nil {
					t.Fatal(err)
				}
			}
			for _, kind := range []string{"pay", "ship"} {
				if _, err := client.Send(ctx, "a", stead.Event{ID: "a-" + kind, Kind: kind}); err != nil {
					t.Fatal(err)
				}
			}
			w, err := worker.New(worker.Config{Store: b.Store, Transport: b.Transport, Machines: machines,
				BatchSize: c.batch, SharedTx: b.shared(t, c.shared), Finisher: b.finisher(t, c.shared), IdleWait: 10 * time.Millisecond, RetryDelay: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- w.Run(runCtx) }()
			defer func() {
				stop()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
			}()
			waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			a, err := client.Wait(waitCtx, "a")
			if err != nil || a.Outcome != "ok" {
				t.Fatalf("Wait(a): %+v, %v", a, err)
			}
			want := map[string]stead.AttrValue{"customer": stead.AttrInt(42), "paid": stead.AttrBool(true)}
			if len(a.Attributes) != len(want) || a.Attributes["customer"] != want["customer"] || a.Attributes["paid"] != want["paid"] {
				t.Fatalf("a's attributes %v, want %v", a.Attributes, want)
			}
			list := func(conds ...string) []string {
				t.Helper()
				var f stead.ListFilter
				for _, s := range conds {
					c, err := stead.ParseAttributeFilter(s)
					if err != nil {
						t.Fatal(err)
					}
					f.Attributes = append(f.Attributes, c)
				}
				p, err := b.Store.List(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				var ids []string
				for _, s := range p.Items {
					ids = append(ids, s.ID)
				}
				return ids
			}
			deadline := time.Now().Add(10 * time.Second)
			for len(list("stage=open")) < 2 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond) // b and c take their start step
			}
			for _, tt := range []struct {
				conds []string
				want  []string
			}{
				{[]string{"customer=42"}, []string{"a", "b"}},
				{[]string{"customer=42", "paid=true"}, []string{"a"}},
				{[]string{"stage=open"}, []string{"b", "c"}},
				{[]string{"customer=7", "stage=open"}, []string{"c"}},
				{[]string{"paid=false"}, nil},
			} {
				if got := list(tt.conds...); !slices.Equal(got, tt.want) {
					t.Errorf("List where %v: %v, want %v", tt.conds, got, tt.want)
				}
			}
		})
	}
}
