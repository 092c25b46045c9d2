package worker

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/steadhq/stead"
)

// TestCreateBatchCarriesAttributes creates executions with attributes, which the store finds by
// them from the first commit on and keeps through the worker's steps; an invalid attribute
// refuses the batch.
func TestCreateBatchCarriesAttributes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	news := []NewExecution{
		{DefinitionID: "counter", ID: "a", Attributes: map[string]stead.AttrValue{"customer": stead.AttrInt(42)}},
		{DefinitionID: "counter", ID: "b", Attributes: map[string]stead.AttrValue{"customer": stead.AttrInt(7)}},
	}
	if _, err := h.client.CreateBatch(ctx, news); err != nil {
		t.Fatal(err)
	}
	news[0].Attributes["customer"] = stead.AttrInt(0) // the client kept its own copy
	customer42 := stead.ListFilter{Attributes: []stead.AttrFilter{stead.Where("customer", stead.AttrEq, stead.AttrInt(42))}}
	find := func() []stead.Summary {
		t.Helper()
		p, err := h.store.List(ctx, customer42)
		if err != nil {
			t.Fatal(err)
		}
		return p.Items
	}
	if got := find(); len(got) != 1 || got[0].ID != "a" {
		t.Fatalf("customer=42 lists %+v, want a", got)
	}
	h.start(h.config())
	eventually(t, 5*time.Second, "a started", func() bool {
		_, a := h.counts("a")
		return a.Status == stead.StatusRunning
	})
	if got := find(); len(got) != 1 || got[0].Status != stead.StatusRunning {
		t.Fatalf("after the start step, customer=42 lists %+v", got)
	}
	if exe, err := h.store.Load(ctx, "a"); err != nil || exe.Attributes["customer"] != stead.AttrInt(42) {
		t.Fatalf("Load(a) after its start step: attributes %v, %v", exe.Attributes, err)
	}

	bad := []NewExecution{{DefinitionID: "counter", ID: "c"},
		{DefinitionID: "counter", ID: "d", Attributes: map[string]stead.AttrValue{"no spaces": stead.AttrInt(1)}}}
	if _, err := h.client.CreateBatch(ctx, bad); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("CreateBatch with an invalid attribute: %v, want ErrInvalid", err)
	}
	if _, err := h.store.Load(ctx, "c"); !errors.Is(err, stead.ErrNotFound) {
		t.Fatalf("the valid item of a refused batch was written: %v", err)
	}
}

// TestMergeBundlesKeepsAttributeChanges: a chain's commit carries the attribute changes of every
// step in it, a later step's over an earlier one's, without writing into the earlier bundle's map.
func TestMergeBundlesKeepsAttributeChanges(t *testing.T) {
	first := stead.Bundle{ProcessedEventID: "e1", Attributes: map[string]stead.AttrValue{
		"stage": stead.AttrString("open"), "customer": stead.AttrInt(42)}}
	kept := maps.Clone(first.Attributes)
	second := stead.Bundle{Attributes: map[string]stead.AttrValue{"stage": {}, "paid": stead.AttrBool(true)}}
	got := mergeBundles(first, second, "e2")
	want := map[string]stead.AttrValue{"stage": {}, "customer": stead.AttrInt(42), "paid": stead.AttrBool(true)}
	if !maps.Equal(got.Attributes, want) {
		t.Fatalf("merged attributes %v, want %v", got.Attributes, want)
	}
	if !maps.Equal(first.Attributes, kept) {
		t.Fatalf("the earlier bundle's map was written: %v", first.Attributes)
	}
	if got := mergeBundles(first, stead.Bundle{}, "e3"); !maps.Equal(got.Attributes, kept) {
		t.Fatalf("a step without changes: %v, want %v", got.Attributes, kept)
	}
}
