package transport_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// blocking is a Backend whose ClaimBatch blocks until release is closed and whose Wait blocks
// until its context ends; it records when Close reached it.
type blocking struct {
	recorder
	inClaim, release chan struct{}
	inWait           chan struct{}
	closedAt         chan time.Time
	claimReturned    time.Time
}

func (b *blocking) ClaimBatch(context.Context, string, time.Duration, int, int) ([]transport.Lease, error) {
	close(b.inClaim)
	<-b.release
	b.claimReturned = time.Now()
	return nil, nil
}

func (b *blocking) Wait(ctx context.Context) error {
	close(b.inWait)
	<-ctx.Done()
	return ctx.Err()
}

func (b *blocking) Close() error {
	b.closedAt <- time.Now()
	return nil
}

// TestCloseWaitsForCallsInFlight checks that Close ends a Wait in flight (with ErrClosed), waits
// for a claim in flight before closing the backend, and that calls made meanwhile are refused.
func TestCloseWaitsForCallsInFlight(t *testing.T) {
	t.Parallel()
	b := &blocking{inClaim: make(chan struct{}), release: make(chan struct{}), inWait: make(chan struct{}), closedAt: make(chan time.Time, 1)}
	tr := transport.New(b)
	ctx := context.Background()
	claimed := make(chan struct{})
	go func() {
		defer close(claimed)
		_, _ = tr.ClaimBatch(ctx, "w", time.Second, 0, 1)
	}()
	waited := make(chan error, 1)
	go func() { waited <- tr.Wait(ctx) }()
	<-b.inClaim
	<-b.inWait
	closed := make(chan error, 1)
	go func() { closed <- tr.Close() }()
	if err := <-waited; !errors.Is(err, stead.ErrClosed) {
		t.Fatalf("Wait in flight when Close began = %v, want ErrClosed", err)
	}
	select {
	case <-b.closedAt:
		t.Fatal("Close reached the backend while a claim was in flight")
	case <-time.After(50 * time.Millisecond):
	}
	close(b.release)
	<-claimed
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if at := <-b.closedAt; at.Before(b.claimReturned) {
		t.Fatalf("the backend closed at %v, before the claim in flight returned at %v", at, b.claimReturned)
	}
	if _, err := tr.ClaimBatch(ctx, "w", time.Second, 0, 1); !errors.Is(err, stead.ErrClosed) {
		t.Fatalf("ClaimBatch after Close = %v, want ErrClosed", err)
	}
	if err := tr.Close(); err != nil {
		t.Fatalf("a second Close = %v", err)
	}
}
