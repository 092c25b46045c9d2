package stead_test

import (
	"context"
	"errors"
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
