package stead_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/memstore"
)

// blockingLoad is a backend whose Load waits until release is closed.
type blockingLoad struct {
	stead.Backend
	entered, release chan struct{}
	closed           chan struct{}
}

func (b *blockingLoad) Load(ctx context.Context, id string) (*stead.Execution, error) {
	close(b.entered)
	<-b.release
	return b.Backend.Load(ctx, id)
}

func (b *blockingLoad) Close() error {
	close(b.closed)
	return b.Backend.Close()
}

// TestCloseWaitsForCallsInFlight checks that Close does not close the backend under a call, and
// that the backend sees no call after Close.
func TestCloseWaitsForCallsInFlight(t *testing.T) {
	b := &blockingLoad{Backend: memstore.New().Backend(), entered: make(chan struct{}),
		release: make(chan struct{}), closed: make(chan struct{})}
	s := stead.NewStore(b)
	loadDone := make(chan error, 1)
	go func() {
		_, err := s.Load(context.Background(), "x")
		loadDone <- err
	}()
	<-b.entered
	closeDone := make(chan error, 1)
	go func() { closeDone <- s.Close() }()
	select {
	case <-b.closed:
		t.Fatal("the backend was closed while a Load was in flight")
	case <-time.After(50 * time.Millisecond):
	}
	close(b.release)
	if err := <-loadDone; !errors.Is(err, stead.ErrNotFound) {
		t.Fatalf("the Load in flight = %v, want ErrNotFound from the backend", err)
	}
	if err := <-closeDone; err != nil {
		t.Fatalf("Close = %v", err)
	}
	if _, err := s.Load(context.Background(), "x"); !errors.Is(err, stead.ErrClosed) {
		t.Fatalf("Load after Close = %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v, want nil", err)
	}
}

// noCounter hides the backend's Counter, as a backend written elsewhere may lack one.
type noCounter struct{ stead.Backend }

// TestCountPagesWithoutCounter counts on a backend without Counter, over several pages, and
// holds the result to the count of the backend that has one.
func TestCountPagesWithoutCounter(t *testing.T) {
	ctx := t.Context()
	withCounter := memstore.New()
	defer withCounter.Close()
	paged := stead.NewStore(noCounter{withCounter.Backend()})
	if _, ok := paged.Backend().(stead.Counter); ok {
		t.Fatal("the wrapper still has Count")
	}
	n := 2*stead.MaxListLimit + 7
	statuses := []stead.Status{stead.StatusRunning, stead.StatusDone, stead.StatusFailed}
	for i := range n {
		exe := &stead.Execution{ID: fmt.Sprintf("x%05d", i), DefinitionID: fmt.Sprintf("d%d", i%2), Status: statuses[i%3]}
		if _, err := withCounter.Save(ctx, exe); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []stead.ListFilter{{}, {DefinitionID: "d1"}, {Statuses: []stead.Status{stead.StatusDone}}, {IDPrefix: "x01"}} {
		want, err := withCounter.Count(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := paged.Count(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if got.Total != want.Total || !maps.Equal(got.ByStatus, want.ByStatus) || !maps.Equal(got.ByDefinition, want.ByDefinition) {
			t.Errorf("%+v: paged count %+v, counted %+v", f, got, want)
		}
	}
	if c, _ := paged.Count(ctx, stead.ListFilter{}); c.Total != int64(n) || c.ByStatus[stead.StatusRunning] != int64((n+2)/3) {
		t.Errorf("count of everything = %+v, want %d in all", c, n)
	}
}

// TestListWithAttributesNeedsAnAttributeBackend: a backend that does not index attributes cannot
// list them, and says so rather than list none.
func TestListWithAttributesNeedsAnAttributeBackend(t *testing.T) {
	ctx := t.Context()
	mem := memstore.New()
	defer mem.Close()
	exe := &stead.Execution{ID: "a", DefinitionID: "d", Status: stead.StatusRunning,
		Attributes: map[string]stead.AttrValue{"customer": stead.AttrInt(42)}}
	if _, err := mem.Save(ctx, exe); err != nil {
		t.Fatal(err)
	}
	plain := stead.NewStore(noCounter{mem.Backend()})
	if _, err := plain.List(ctx, stead.ListFilter{WithAttributes: true}); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("List with attributes on a backend without an index = %v, want ErrInvalid", err)
	}
	p, err := plain.List(ctx, stead.ListFilter{})
	if err != nil || len(p.Items) != 1 || p.Items[0].Attributes != nil {
		t.Fatalf("List without them = %+v, %v; want one item without attributes", p, err)
	}
	p, err = mem.List(ctx, stead.ListFilter{WithAttributes: true})
	if err != nil || len(p.Items) != 1 || p.Items[0].Attributes["customer"] != stead.AttrInt(42) {
		t.Fatalf("memstore List with attributes = %+v, %v", p, err)
	}
}
