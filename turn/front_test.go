package turn_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead/turn"
)

// The checked Stores have the shape of the execution store's front: a call with a context that
// is already done is refused before the backend, and nothing is written.
func TestDoneContextReachesNoBackend(t *testing.T) {
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
			s := turn.NewStores(unreachable{})
			for name, call := range calls(s) {
				err, panicked := reached(func() error { return call(tc.ctx) })
				if panicked || !errors.Is(err, tc.want) {
					t.Errorf("%s: %v (reached the backend: %v), want %v", name, err, panicked, tc.want)
				}
			}
		})
	}
}

// A done context does not hide bad input: the argument checks come first, as in the execution
// store's front, and after them Close.
func TestRefusalOrder(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	s := turn.NewStores(unreachable{})
	if _, err := s.Conversations.LoadConversation(cancelled, "", turn.NewID()); !errors.Is(err, turn.ErrInvalid) {
		t.Fatalf("bad input with a cancelled context: %v, want ErrInvalid", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Conversations.LoadConversation(cancelled, "a", turn.NewID()); !errors.Is(err, turn.ErrClosed) {
		t.Fatalf("a cancelled call after Close: %v, want ErrClosed", err)
	}
}

// blocking is a backend whose calls below wait until release is closed; entered receives once
// per call that reached it. Close records whether a call was still running.
type blocking struct {
	unreachable
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	running int
	closed  bool
	under   bool // Close ran while a call was running
}

func (b *blocking) call() {
	b.mu.Lock()
	b.running++
	b.mu.Unlock()
	b.entered <- struct{}{}
	<-b.release
	b.mu.Lock()
	b.running--
	b.mu.Unlock()
}

func (b *blocking) LoadConversation(context.Context, string, turn.ID) (turn.Conversation, error) {
	b.call()
	return turn.Conversation{}, nil
}

func (b *blocking) AppendEvents(context.Context, turn.EventBatch) ([]turn.ID, error) {
	b.call()
	return nil, nil
}

func (b *blocking) Commit(context.Context, string, turn.Bundle) (turn.Receipt, error) {
	b.call()
	return turn.Receipt{}, nil
}

func (b *blocking) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed, b.under = true, b.running > 0
	return nil
}

// Close waits for the calls in flight, a read, a write and a commit alike, and closes the backend
// only once they returned; the calls get their answers, and a call after Close is ErrClosed.
func TestCloseWaitsForCallsInFlight(t *testing.T) {
	for _, name := range []string{"LoadConversation", "AppendEvents", "Commit"} {
		t.Run(name, func(t *testing.T) {
			b := &blocking{entered: make(chan struct{}), release: make(chan struct{})}
			s := turn.NewStores(b)
			call := calls(s)[name]
			callDone := make(chan error, 1)
			go func() { callDone <- call(t.Context()) }()
			<-b.entered
			closeDone := make(chan error, 1)
			go func() { closeDone <- s.Close() }()
			select {
			case err := <-closeDone:
				t.Fatalf("Close returned (%v) while %s was in flight", err, name)
			case <-time.After(50 * time.Millisecond):
			}
			close(b.release)
			if err := <-callDone; err != nil {
				t.Fatalf("%s in flight during Close: %v, want its answer", name, err)
			}
			if err := <-closeDone; err != nil {
				t.Fatal(err)
			}
			b.mu.Lock()
			closed, under := b.closed, b.under
			b.mu.Unlock()
			if !closed || under {
				t.Fatalf("backend closed %v, closed under a call %v; want closed after the call", closed, under)
			}
			err, panicked := reached(func() error { return call(t.Context()) })
			if panicked || !errors.Is(err, turn.ErrClosed) {
				t.Fatalf("%s after Close: %v (reached the backend: %v), want ErrClosed", name, err, panicked)
			}
		})
	}
}

// limits is a backend that records the limit every limited method was given.
type limits struct {
	unreachable
	got int
}

func (l *limits) ListConversations(_ context.Context, _ string, limit int) ([]turn.Conversation, error) {
	l.got = limit
	return nil, nil
}

func (l *limits) LoadRecentTurns(_ context.Context, _ string, _ turn.ID, limit int) ([]turn.Turn, error) {
	l.got = limit
	return nil, nil
}

func (l *limits) ListUnfinishedTurns(_ context.Context, _ turn.RecoveryScope, limit int) ([]turn.PhaseMarker, error) {
	l.got = limit
	return nil, nil
}

func (l *limits) ListSince(_ context.Context, _ string, _ turn.CaseKey, _ turn.Revision, limit int) ([]turn.Event, error) {
	l.got = limit
	return nil, nil
}

func (l *limits) ReadFrom(_ context.Context, _ string, _ turn.Cursor, limit int) (turn.EventPage, error) {
	l.got = limit
	return turn.EventPage{}, nil
}

func (l *limits) ClaimDue(_ context.Context, _ time.Time, limit int, _ string) ([]turn.OutboxEntry, error) {
	l.got = limit
	return nil, nil
}

func (l *limits) ReplaysForConversation(_ context.Context, _ string, _ turn.ID, limit int) ([]turn.ReplayRecord, error) {
	l.got = limit
	return nil, nil
}

// Every limit follows the execution store's rule: 0 is DefaultLimit, 1 to MaxLimit pass as they
// are, a negative one or one above MaxLimit is ErrInvalid and reaches no backend.
func TestLimitsFollowOneRule(t *testing.T) {
	id, key, now := turn.NewID(), turn.CaseKey{Workflow: "w", CaseID: "c"}, time.Unix(100, 0)
	methods := map[string]func(s turn.Stores, limit int) error{
		"ListConversations": func(s turn.Stores, n int) error {
			_, err := s.Conversations.ListConversations(t.Context(), "a", n)
			return err
		},
		"LoadRecentTurns": func(s turn.Stores, n int) error {
			_, err := s.Conversations.LoadRecentTurns(t.Context(), "a", id, n)
			return err
		},
		"ListUnfinishedTurns": func(s turn.Stores, n int) error {
			_, err := s.Conversations.ListUnfinishedTurns(t.Context(), turn.AllAccounts(), n)
			return err
		},
		"ListSince": func(s turn.Stores, n int) error {
			_, err := s.Events.ListSince(t.Context(), "a", key, 0, n)
			return err
		},
		"ReadFrom": func(s turn.Stores, n int) error {
			_, err := s.Events.ReadFrom(t.Context(), "a", turn.Start, n)
			return err
		},
		"ClaimDue": func(s turn.Stores, n int) error {
			_, err := s.Outbox.ClaimDue(t.Context(), now, n, "w")
			return err
		},
		"ReplaysForConversation": func(s turn.Stores, n int) error {
			_, err := s.Replay.ReplaysForConversation(t.Context(), "a", id, n)
			return err
		},
	}
	for _, tc := range []struct {
		name  string
		limit int
		want  int // the limit the backend gets; 0: ErrInvalid, nothing reached
	}{
		{"zero is the default", 0, turn.DefaultLimit},
		{"one", 1, 1},
		{"the largest", turn.MaxLimit, turn.MaxLimit},
		{"above the largest", turn.MaxLimit + 1, 0},
		{"the largest int", math.MaxInt, 0},
		{"negative", -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, call := range methods {
				b := &limits{}
				err, panicked := reached(func() error { return call(turn.NewStores(b), tc.limit) })
				switch {
				case panicked:
					t.Errorf("%s(%d) reached a method the test backend lacks", name, tc.limit)
				case tc.want == 0 && (!errors.Is(err, turn.ErrInvalid) || b.got != 0):
					t.Errorf("%s(%d) = %v, the backend got %d; want ErrInvalid and nothing reached", name, tc.limit, err, b.got)
				case tc.want != 0 && (err != nil || b.got != tc.want):
					t.Errorf("%s(%d) = %v, the backend got %d; want %d", name, tc.limit, err, b.got, tc.want)
				}
				if err := turn.ValidateLimit(tc.limit); (err != nil) != (tc.want == 0) {
					t.Errorf("ValidateLimit(%d) = %v", tc.limit, err)
				}
			}
		})
	}
}
