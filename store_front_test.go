package stead_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/memstore"
)

// unreachable is a backend every call of which panics (its Backend is nil): the Store must answer
// without it.
type unreachable struct{ stead.Backend }

// reached runs f and reports whether it got as far as the backend.
func reached(f func() error) (err error, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return f(), false
}

// storeCalls are calls of a Store with arguments that pass its checks, reads and writes alike.
func storeCalls(s *stead.Store) map[string]func(context.Context) error {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	exe := &stead.Execution{ID: "order-1", DefinitionID: "order", Status: stead.StatusRunning}
	e := func(_ any, err error) error { return err }
	return map[string]func(context.Context) error{
		"Load":          func(ctx context.Context) error { return e(s.Load(ctx, "order-1")) },
		"IsProcessed":   func(ctx context.Context) error { return e(s.IsProcessed(ctx, "order-1", "ev-1")) },
		"List":          func(ctx context.Context) error { return e(s.List(ctx, stead.ListFilter{})) },
		"ReadTrace":     func(ctx context.Context) error { return e(s.ReadTrace(ctx, "order-1")) },
		"Timers":        func(ctx context.Context) error { return e(s.Timers(ctx, "order-1")) },
		"PendingOutbox": func(ctx context.Context) error { return e(s.PendingOutbox(ctx, "", 0)) },
		"PendingSpawns": func(ctx context.Context) error { return e(s.PendingSpawns(ctx, "", 0)) },
		"Commit":        func(ctx context.Context) error { return e(s.Commit(ctx, exe, stead.Bundle{})) },
		"CommitBatch":   func(ctx context.Context) error { return e(s.CommitBatch(ctx, []stead.CommitItem{{Execution: exe}})) },
		"AppendTrace": func(ctx context.Context) error {
			return e(s.AppendTrace(ctx, "order-1", stead.TraceStep{EventKind: "go", To: "done"}))
		},
		"Purge":       func(ctx context.Context) error { return e(s.Purge(ctx, "order-1", 1)) },
		"ClaimOutbox": func(ctx context.Context) error { return e(s.ClaimOutbox(ctx, now, time.Minute, 0)) },
		"AckOutbox":   func(ctx context.Context) error { return s.AckOutbox(ctx, []int64{1}) },
		"ClaimSpawns": func(ctx context.Context) error { return e(s.ClaimSpawns(ctx, now, time.Minute, 0)) },
		"AckSpawns":   func(ctx context.Context) error { return s.AckSpawns(ctx, []int64{1}) },
		"DueTimers":   func(ctx context.Context) error { return e(s.DueTimers(ctx, now, 0)) },
		"DeleteTimer": func(ctx context.Context) error {
			return e(s.DeleteTimer(ctx, stead.Timer{ExecutionID: "order-1", Path: "wait", FireAt: now}))
		},
		"Count":        func(ctx context.Context) error { return e(s.Count(ctx, stead.ListFilter{})) },
		"LoadForEvent": func(ctx context.Context) error { return e2(s.LoadForEvent(ctx, "order-1", "ev-1")) },
		"LoadForEvents": func(ctx context.Context) error {
			return e(s.LoadForEvents(ctx, []stead.EventRef{{ExecutionID: "order-1", EventID: "ev-1"}}))
		},
	}
}

func e2[A, B any](_ A, _ B, err error) error { return err }

// A call whose context is already done is refused before the backend, read or write, with the
// context's error: the same rule as turn.Stores.
func TestStoreRefusesADoneContext(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, stop := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer stop()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"cancelled", cancelled, context.Canceled},
		{"past its deadline", expired, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := stead.NewStore(unreachable{})
			for name, call := range storeCalls(s) {
				err, panicked := reached(func() error { return call(tc.ctx) })
				if panicked || !errors.Is(err, tc.want) {
					t.Errorf("%s: %v (reached the backend: %v), want %v", name, err, panicked, tc.want)
				}
			}
		})
	}
}

// Nothing is written by a refused call: a commit with a cancelled context leaves no execution.
func TestStoreCancelledCommitWritesNothing(t *testing.T) {
	s := memstore.New()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	exe := &stead.Execution{ID: "order-1", DefinitionID: "order", Status: stead.StatusRunning}
	if _, err := s.Commit(cancelled, exe, stead.Bundle{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit with a cancelled context: %v", err)
	}
	if _, err := s.Load(context.Background(), "order-1"); !errors.Is(err, stead.ErrNotFound) {
		t.Fatalf("Load after the refused commit: %v, want ErrNotFound", err)
	}
}

// After Close every call is ErrClosed and none reaches the backend.
func TestStoreClosedReachesNoBackend(t *testing.T) {
	s := stead.NewStore(closing{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for name, call := range storeCalls(s) {
		err, panicked := reached(func() error { return call(context.Background()) })
		if panicked || !errors.Is(err, stead.ErrClosed) {
			t.Errorf("%s after Close: %v (reached the backend: %v), want ErrClosed", name, err, panicked)
		}
	}
}

type closing struct{ unreachable }

func (closing) Close() error { return nil }

// Every limit of the Store follows one rule, turn.Stores' too: 0 is DefaultListLimit, above
// MaxListLimit or negative is ErrInvalid.
func TestStoreLimitsFollowOneRule(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	now := time.Now()
	e := func(_ any, err error) error { return err }
	methods := map[string]func(limit int) error{
		"List":          func(n int) error { return e(s.List(ctx, stead.ListFilter{Limit: n})) },
		"PendingOutbox": func(n int) error { return e(s.PendingOutbox(ctx, "", n)) },
		"PendingSpawns": func(n int) error { return e(s.PendingSpawns(ctx, "", n)) },
		"ClaimOutbox":   func(n int) error { return e(s.ClaimOutbox(ctx, now, time.Minute, n)) },
		"ClaimSpawns":   func(n int) error { return e(s.ClaimSpawns(ctx, now, time.Minute, n)) },
		"DueTimers":     func(n int) error { return e(s.DueTimers(ctx, now, n)) },
	}
	for _, tc := range []struct {
		name    string
		limit   int
		invalid bool
	}{
		{"zero is the default", 0, false},
		{"the largest", stead.MaxListLimit, false},
		{"above the largest", stead.MaxListLimit + 1, true},
		{"the largest int", math.MaxInt, true},
		{"negative", -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, call := range methods {
				if err := call(tc.limit); errors.Is(err, stead.ErrInvalid) != tc.invalid || (!tc.invalid && err != nil) {
					t.Errorf("%s(%d) = %v, want invalid %v", name, tc.limit, err, tc.invalid)
				}
			}
		})
	}
	// Zero is the default page, not nothing: a List of 0 pages DefaultListLimit executions.
	for i := range stead.DefaultListLimit + 1 {
		exe := &stead.Execution{ID: "x" + string(rune('a'+i/26)) + string(rune('a'+i%26)), DefinitionID: "d", Status: stead.StatusRunning}
		if _, err := s.Save(ctx, exe); err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.List(ctx, stead.ListFilter{})
	if err != nil || len(page.Items) != stead.DefaultListLimit || page.NextCursor == "" {
		t.Fatalf("List with limit 0: %d items, next %q, %v; want %d and a next page", len(page.Items), page.NextCursor, err, stead.DefaultListLimit)
	}
}
