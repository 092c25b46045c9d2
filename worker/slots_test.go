package worker

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/memtransport"
)

// TestSlotsTake: take waits for the first place only, takes what else is free up to max, and
// gives up when its context ends.
func TestSlotsTake(t *testing.T) {
	t.Parallel()
	s := newSlots(3)
	ctx := context.Background()
	if n := s.take(ctx, 2); n != 2 {
		t.Fatalf("take(2) of 3 free = %d", n)
	}
	if n := s.take(ctx, 5); n != 1 {
		t.Fatalf("take(5) of 1 free = %d", n)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if n := s.take(done, 1); n != 0 {
		t.Fatalf("take with none free and a done context = %d", n)
	}
	s.give(2)
	if n := s.take(ctx, 3); n != 2 {
		t.Fatalf("take(3) after giving 2 back = %d", n)
	}
}

// TestHeartbeat: a kept lease outlives its visibility while the heartbeat runs; a dropped one,
// and one kept past maxAge, ends on time.
func TestHeartbeat(t *testing.T) {
	t.Parallel()
	tr := memtransport.New(memtransport.WithPollInterval(10 * time.Millisecond))
	defer tr.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	const vis = 300 * time.Millisecond // a renewal comes vis/3 before the end: room for a loaded machine
	for _, g := range []string{"kept", "dropped", "aged"} {
		if err := tr.Publish(ctx, g, stead.Event{ID: g, Kind: "k"}, 0); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := tr.ClaimBatch(ctx, "w", vis, 0, 3)
	if err != nil || len(ls) != 3 {
		t.Fatalf("claim: %d leases, %v", len(ls), err)
	}
	h, aged := newHeartbeat(vis, 0), newHeartbeat(vis, 2*vis)
	for _, l := range ls {
		if l.Group == "aged" {
			aged.add(ls[2:3])
			continue
		}
		h.add([]transport.Lease{l})
	}
	log := slog.New(slog.DiscardHandler)
	done := make(chan struct{}, 2)
	go func() { h.run(ctx, tr, log); done <- struct{}{} }()
	go func() { aged.run(ctx, tr, log); done <- struct{}{} }()
	defer func() { stop(); <-done; <-done }()
	for _, l := range ls {
		if l.Group == "dropped" {
			h.drop(l)
		}
	}
	claimable := func() map[string]bool {
		got, err := tr.ClaimBatch(ctx, "other", time.Hour, 0, 3)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, l := range got {
			m[l.Group] = true
		}
		return m
	}
	taken := map[string]bool{}
	deadline := time.Now().Add(6 * vis)
	for time.Now().Before(deadline) {
		for g := range claimable() {
			taken[g] = true
		}
		time.Sleep(vis / 4)
	}
	if taken["kept"] || !taken["dropped"] || !taken["aged"] {
		t.Fatalf("claimable by another worker over six leases: %v; want dropped and aged, not kept", taken)
	}
}
