package chart_test

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/memstore"
)

type attrs = map[string]stead.AttrValue

// TestActionSetsAttributes: what actions set with SetAttribute reaches the execution the step
// returns and its bundle together, only when the action succeeds, checked as at create; a store
// accepts the commit and indexes the result.
func TestActionSetsAttributes(t *testing.T) {
	full := attrs{}
	for i := range stead.MaxAttributes {
		full[fmt.Sprintf("k%d", i)] = stead.AttrInt(int64(i))
	}
	boom := errors.New("boom")
	tests := []struct {
		name string
		in   attrs
		// first and second are the entry actions of the state the step enters, in order.
		first, second func(c chart.ActionContext) error
		want          attrs  // the execution's attributes after the step
		wantBundle    attrs  // Bundle.Attributes (nil: none)
		failed        string // the action fails the execution with an error containing this
	}{{
		name:       "set on none",
		first:      func(c chart.ActionContext) error { c.SetAttribute("customer", stead.AttrInt(42)); return nil },
		want:       attrs{"customer": stead.AttrInt(42)},
		wantBundle: attrs{"customer": stead.AttrInt(42)},
	}, {
		name: "set, replace and delete",
		in:   attrs{"customer": stead.AttrString("42"), "tier": stead.AttrString("gold")},
		first: func(c chart.ActionContext) error {
			c.DeleteAttribute("tier")
			c.SetAttribute("customer", stead.AttrInt(42))
			c.SetAttribute("paid", stead.AttrBool(true))
			return nil
		},
		want:       attrs{"customer": stead.AttrInt(42), "paid": stead.AttrBool(true)},
		wantBundle: attrs{"customer": stead.AttrInt(42), "paid": stead.AttrBool(true), "tier": {}},
	}, {
		name:  "the same value changes nothing",
		in:    attrs{"customer": stead.AttrInt(42)},
		first: func(c chart.ActionContext) error { c.SetAttribute("customer", stead.AttrInt(42)); return nil },
		want:  attrs{"customer": stead.AttrInt(42)},
	}, {
		name: "a later action sees and undoes an earlier one's",
		first: func(c chart.ActionContext) error {
			c.SetAttribute("amount", stead.AttrInt(100))
			return nil
		},
		second: func(c chart.ActionContext) error {
			if v, ok := c.Attribute("amount"); !ok || v != stead.AttrInt(100) {
				return fmt.Errorf("second action sees amount %v %v", v, ok)
			}
			c.DeleteAttribute("amount")
			if _, ok := c.Attribute("amount"); ok {
				return errors.New("deleted amount still seen")
			}
			return nil
		},
		wantBundle: attrs{"amount": {}},
	}, {
		name: "a failed action's changes are dropped",
		in:   attrs{"customer": stead.AttrInt(42)},
		first: func(c chart.ActionContext) error {
			c.SetAttribute("customer", stead.AttrInt(7))
			return boom
		},
		want:   attrs{"customer": stead.AttrInt(42)},
		failed: "boom",
	}, {
		name: "an earlier action's changes are kept when a later one fails",
		first: func(c chart.ActionContext) error {
			c.SetAttribute("stage", stead.AttrString("one"))
			return nil
		},
		second:     func(c chart.ActionContext) error { c.SetAttribute("stage", stead.AttrString("two")); return boom },
		want:       attrs{"stage": stead.AttrString("one")},
		wantBundle: attrs{"stage": stead.AttrString("one")},
		failed:     "boom",
	}, {
		name:   "bad key",
		first:  func(c chart.ActionContext) error { c.SetAttribute("9lives", stead.AttrInt(1)); return nil },
		failed: "attribute key",
	}, {
		name: "string too long",
		first: func(c chart.ActionContext) error {
			c.SetAttribute("note", stead.AttrString(strings.Repeat("x", 257)))
			return nil
		},
		failed: "attribute note",
	}, {
		name:   "zero time",
		first:  func(c chart.ActionContext) error { c.SetAttribute("due", stead.AttrTime(time.Time{})); return nil },
		failed: "attribute due",
	}, {
		name:   "more than MaxAttributes",
		in:     full,
		first:  func(c chart.ActionContext) error { c.SetAttribute("one_more", stead.AttrInt(1)); return nil },
		want:   full,
		failed: "more than 16",
	}, {
		name: "a delete makes room for a set",
		in:   full,
		first: func(c chart.ActionContext) error {
			c.DeleteAttribute("k0")
			c.SetAttribute("one_more", stead.AttrInt(1))
			return nil
		},
		want: func() attrs {
			m := maps.Clone(full)
			delete(m, "k0")
			m["one_more"] = stead.AttrInt(1)
			return m
		}(),
		wantBundle: attrs{"k0": {}, "one_more": stead.AttrInt(1)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := chart.New("attrs").DefaultRetry(*chart.NoRetry())
			b.Initial("idle")
			b.State("idle").On("go", "working")
			b.State("working").Entry("first", "second").On("done", "over")
			b.State("over").Final("ok")
			def, err := b.Definition()
			if err != nil {
				t.Fatal(err)
			}
			wrap := func(f func(chart.ActionContext) error) chart.Action {
				return func(c chart.ActionContext) (chart.ActionResult, error) {
					if f == nil {
						return chart.ActionResult{}, nil
					}
					return chart.ActionResult{}, f(c)
				}
			}
			reg := chart.NewRegistry().Action("first", wrap(tt.first)).Action("second", wrap(tt.second))
			eng, err := chart.NewEngine(def, reg)
			if err != nil {
				t.Fatal(err)
			}
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			store := memstore.New()
			exe := &stead.Execution{ID: "e", DefinitionID: "attrs", Status: stead.StatusPending,
				CreatedAt: now, UpdatedAt: now, Attributes: maps.Clone(tt.in)}
			exe, bundle, err := eng.Step(exe, stead.Event{ID: "s", Kind: chart.KindStart}, now)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.Commit(t.Context(), exe, bundle); err != nil {
				t.Fatal(err)
			}
			if exe, err = store.Load(t.Context(), "e"); err != nil {
				t.Fatal(err)
			}
			before := maps.Clone(exe.Attributes)
			out, bundle, err := eng.Step(exe, stead.Event{ID: "g", Kind: "go"}, now)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(exe.Attributes, before) {
				t.Fatalf("the step changed its input's attributes: %v, was %v", exe.Attributes, before)
			}
			failure := out.Error
			if tt.failed == "" && out.ActivePath != "working" {
				t.Fatalf("path %q (error %q), want working", out.ActivePath, failure)
			}
			if tt.failed != "" && (out.Status != stead.StatusFailed || !strings.Contains(failure, tt.failed)) {
				t.Fatalf("status %s error %q, want failed with %q", out.Status, failure, tt.failed)
			}
			want := tt.want
			if tt.failed != "" && want == nil {
				want = tt.in
			}
			if !maps.Equal(out.Attributes, want) {
				t.Errorf("execution's attributes %v, want %v", out.Attributes, want)
			}
			if !maps.Equal(bundle.Attributes, tt.wantBundle) {
				t.Errorf("bundle's attributes %v, want %v", bundle.Attributes, tt.wantBundle)
			}
			// memstore refuses attributes changed on the execution alone: the commit passing
			// and a filter finding the execution show the two agree.
			if _, err := store.Commit(t.Context(), out, bundle); err != nil {
				t.Fatalf("commit: %v", err)
			}
			for k, v := range want {
				page, err := store.List(t.Context(), stead.ListFilter{Attributes: []stead.AttrFilter{stead.Where(k, stead.AttrEq, v)}})
				if err != nil || len(page.Items) != 1 {
					t.Fatalf("List where %s=%v: %v, %v", k, v, page, err)
				}
			}
		})
	}
}

// TestDeferredEventsAttributes: an event kept by a deferral and applied again in a later step
// adds its actions' attribute changes to that step's, so the step's bundle and execution agree.
func TestDeferredEventsAttributes(t *testing.T) {
	b := chart.New("deferring").DefaultRetry(*chart.NoRetry())
	b.Initial("waiting")
	b.State("waiting").Defer("pay").On("ready", "open")
	b.State("open").Entry("mark_open").On("pay", "paid")
	b.State("paid").Entry("mark_paid")
	def, err := b.Definition()
	if err != nil {
		t.Fatal(err)
	}
	reg := chart.NewRegistry().
		Action("mark_open", func(c chart.ActionContext) (chart.ActionResult, error) {
			c.SetAttribute("stage", stead.AttrString("open"))
			c.SetAttribute("opened", stead.AttrBool(true))
			return chart.ActionResult{}, nil
		}).
		Action("mark_paid", func(c chart.ActionContext) (chart.ActionResult, error) {
			c.SetAttribute("stage", stead.AttrString("paid"))
			return chart.ActionResult{}, nil
		})
	eng, err := chart.NewEngine(def, reg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	store := memstore.New()
	exe := &stead.Execution{ID: "e", DefinitionID: "deferring", Status: stead.StatusPending, CreatedAt: now, UpdatedAt: now}
	for _, ev := range []stead.Event{{ID: "s", Kind: chart.KindStart}, {ID: "p", Kind: "pay"}, {ID: "r", Kind: "ready"}} {
		out, bundle, err := eng.Step(exe, ev, now)
		if err != nil {
			t.Fatalf("%s: %v", ev.Kind, err)
		}
		c, err := store.Commit(t.Context(), out, bundle)
		if err != nil {
			t.Fatalf("commit %s: %v", ev.Kind, err)
		}
		out.Version = c.Version
		exe = out
	}
	want := attrs{"stage": stead.AttrString("paid"), "opened": stead.AttrBool(true)}
	if exe.ActivePath != "paid" || !maps.Equal(exe.Attributes, want) {
		t.Fatalf("after ready: %s with %v, want paid with %v", exe.ActivePath, exe.Attributes, want)
	}
	stored, err := store.Load(t.Context(), "e")
	if err != nil || !maps.Equal(stored.Attributes, want) {
		t.Fatalf("stored %v (%v), want %v", stored.Attributes, err, want)
	}
	page, err := store.List(t.Context(), stead.ListFilter{Attributes: []stead.AttrFilter{stead.Where("stage", stead.AttrEq, stead.AttrString("paid"))}})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("List stage=paid: %v, %v", page.Items, err)
	}
}
