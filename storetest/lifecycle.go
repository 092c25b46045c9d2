package storetest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/steadhq/stead"
)

var lifecycleRules = []rule{
	{name: "cancelled_context", run: testCancelledContext},
	{name: "calls_after_close", run: testCallsAfterClose},
}

// goodCalls is one valid call of every method, against stored (which exists at version 1).
func (h *harness) goodCalls(stored *stead.Execution) []badCall {
	id := stored.ID
	return []badCall{
		{"Load", func(ctx context.Context, s *stead.Store) error { _, err := s.Load(ctx, id); return err }},
		{"LoadForEvent", func(ctx context.Context, s *stead.Store) error {
			_, _, err := s.LoadForEvent(ctx, id, "ev")
			return err
		}},
		{"LoadForEvents", func(ctx context.Context, s *stead.Store) error {
			_, err := s.LoadForEvents(ctx, []stead.EventRef{{ExecutionID: id, EventID: "ev"}})
			return err
		}},
		{"IsProcessed", func(ctx context.Context, s *stead.Store) error { _, err := s.IsProcessed(ctx, id, "ev"); return err }},
		{"List", func(ctx context.Context, s *stead.Store) error { _, err := s.List(ctx, stead.ListFilter{}); return err }},
		{"ReadTrace", func(ctx context.Context, s *stead.Store) error { _, err := s.ReadTrace(ctx, id); return err }},
		{"Timers", func(ctx context.Context, s *stead.Store) error { _, err := s.Timers(ctx, id); return err }},
		{"PendingOutbox", func(ctx context.Context, s *stead.Store) error { _, err := s.PendingOutbox(ctx, "", 10); return err }},
		{"PendingSpawns", func(ctx context.Context, s *stead.Store) error { _, err := s.PendingSpawns(ctx, "", 10); return err }},
		{"Commit", func(ctx context.Context, s *stead.Store) error {
			e := h.newExe("new")
			_, err := s.Commit(ctx, e, h.fullBundle(e.ID, "new"))
			if e.Version != 0 && err != nil {
				return fmt.Errorf("version moved to %d on error %w", e.Version, err)
			}
			return err
		}},
		{"Commit stored", func(ctx context.Context, s *stead.Store) error {
			_, err := s.Commit(ctx, stored.Clone(), stead.Bundle{})
			return err
		}},
		{"CommitBatch", func(ctx context.Context, s *stead.Store) error {
			_, err := s.CommitBatch(ctx, []stead.CommitItem{{Execution: h.newExe("batched")}})
			return err
		}},
		{"AppendTrace", func(ctx context.Context, s *stead.Store) error {
			_, err := s.AppendTrace(ctx, id, stead.TraceStep{})
			return err
		}},
		{"Purge", func(ctx context.Context, s *stead.Store) error { _, err := s.Purge(ctx, id, 1); return err }},
		{"ClaimOutbox", func(ctx context.Context, s *stead.Store) error {
			_, err := s.ClaimOutbox(ctx, farFuture, time.Minute, 10)
			return err
		}},
		{"AckOutbox", func(ctx context.Context, s *stead.Store) error { return s.AckOutbox(ctx, []int64{1, 2, 3}) }},
		{"ClaimSpawns", func(ctx context.Context, s *stead.Store) error {
			_, err := s.ClaimSpawns(ctx, farFuture, time.Minute, 10)
			return err
		}},
		{"AckSpawns", func(ctx context.Context, s *stead.Store) error { return s.AckSpawns(ctx, []int64{1, 2, 3}) }},
		{"DueTimers", func(ctx context.Context, s *stead.Store) error { _, err := s.DueTimers(ctx, farFuture, 10); return err }},
		{"DeleteTimer", func(ctx context.Context, s *stead.Store) error {
			_, err := s.DeleteTimer(ctx, stead.Timer{ExecutionID: id, Path: "timer/seed", FireAt: base.Add(time.Minute)})
			return err
		}},
	}
}

// callWithin runs call and fails the test if it does not return within a generous bound: a call
// with a dead context or on a closed store must fail fast, not hang.
func (h *harness) callWithin(name string, call func() error) error {
	h.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		h.Fatalf("%s did not return within 30s", name)
		return nil
	}
}

// testCancelledContext calls every method with a context cancelled before the call: each must
// fail, and nothing may be written.
func testCancelledContext(h *harness) {
	stored := h.newExe("stored")
	h.commit(stored, h.fullBundle(stored.ID, "seed"))
	ids := []string{stored.ID, h.id("new"), h.id("batched")}
	refs := []stead.EventRef{{ExecutionID: stored.ID, EventID: "seed-processed"}, {ExecutionID: h.id("new"), EventID: "new-processed"}}
	before := h.snap(ids, refs...)
	ctx, cancel := context.WithCancel(h.ctx)
	cancel()
	for _, c := range h.goodCalls(stored) {
		err := h.callWithin(c.name, func() error { return c.call(ctx, h.s) })
		if err == nil {
			h.Fatalf("%s with a cancelled context succeeded", c.name)
		}
	}
	h.unchanged("calls with a cancelled context", before, ids, refs...)
	// And the store still works afterwards.
	for _, c := range h.goodCalls(stored)[:9] {
		if err := c.call(h.ctx, h.s); err != nil && !errors.Is(err, stead.ErrNotFound) {
			h.Fatalf("%s after the cancelled calls: %v", c.name, err)
		}
	}
}

func testCallsAfterClose(h *harness) {
	stored := h.newExe("stored")
	h.commit(stored, h.fullBundle(stored.ID, "seed"))
	if err := h.s.Close(); err != nil {
		h.Fatalf("Close: %v", err)
	}
	for _, c := range h.goodCalls(stored) {
		err := h.callWithin(c.name, func() error { return c.call(h.ctx, h.s) })
		h.wantErr(c.name+" after Close", err, stead.ErrClosed)
	}
	if err := h.s.Close(); err != nil && !errors.Is(err, stead.ErrClosed) {
		h.Fatalf("second Close: %v, want nil or ErrClosed", err)
	}
}
