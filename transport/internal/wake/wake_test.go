package wake

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/steadhq/stead/internal/errs"
)

func TestWait(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		prepare func(s *Signal)
		ctx     context.Context
		max     time.Duration
		want    error
	}{
		{"cancelled context", func(*Signal) {}, cancelled, 0, context.Canceled},
		{"bound passes", func(*Signal) {}, context.Background(), time.Millisecond, nil},
		{"closed", func(s *Signal) { s.Close() }, context.Background(), 0, errs.Closed},
		{"notified after an empty claim", func(s *Signal) { s.Empty(s.Gen()); s.Notify() }, context.Background(), 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := New()
			tc.prepare(s)
			if err := s.Wait(tc.ctx, tc.max); !errors.Is(err, tc.want) {
				t.Fatalf("Wait = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestNotifyWakesWaiter(t *testing.T) {
	t.Parallel()
	s := New()
	done := make(chan error, 1)
	go func() { done <- s.Wait(context.Background(), 0) }()
	// Keep notifying until the waiter has seen one: it may start listening after the first.
	for {
		s.Notify()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Wait = %v", err)
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestMissedNotificationIsConsumedOnce(t *testing.T) {
	t.Parallel()
	s := New()
	s.Empty(s.Gen())
	s.Notify() // lands between the empty claim and the wait
	if err := s.Wait(context.Background(), 0); err != nil {
		t.Fatalf("first Wait = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.Wait(ctx, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Wait = %v, want it to block until the deadline", err)
	}
}
