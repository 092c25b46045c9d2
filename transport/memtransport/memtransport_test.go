package memtransport_test

import (
	"context"
	"testing"
	"time"

	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/transport/transporttest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	transporttest.Run(t, func(t *testing.T, clock func() time.Time) *transport.Transport {
		return memtransport.New(memtransport.WithClock(clock))
	})
}

// TestWaitWakesWhenLeaseEnds checks that Wait wakes when the earliest lease ends, even with no
// publish and a poll interval far away.
func TestWaitWakesWhenLeaseEnds(t *testing.T) {
	t.Parallel()
	tr := memtransport.New(memtransport.WithPollInterval(time.Hour))
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tr.Publish(ctx, "G", transporttest.Event("e1"), 0); err != nil {
		t.Fatal(err)
	}
	if l, err := tr.Claim(ctx, "w1", 20*time.Millisecond, 0); err != nil || l == nil {
		t.Fatalf("Claim = %v, %v", l, err)
	}
	for {
		l, err := tr.Claim(ctx, "w2", time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		if l != nil {
			if l.Event.ID != "e1" {
				t.Fatalf("redelivered %s, want e1", l.Event.ID)
			}
			return
		}
		if err := tr.Wait(ctx); err != nil {
			t.Fatalf("Wait = %v, want a wake-up when the lease ends", err)
		}
	}
}
