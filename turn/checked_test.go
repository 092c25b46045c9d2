package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/steadhq/stead/turn"
)

// unreachable is a backend every call of which panics: the front must refuse before reaching it.
type unreachable struct{ turn.Backend }

// calls returns every method of the Stores with arguments that pass the front's checks, by name.
func calls(s turn.Stores) map[string]func(context.Context) error {
	ctx0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	id, key := turn.NewID(), turn.CaseKey{Workflow: "w", CaseID: "c"}
	card := turn.Interaction{ID: id, AccountID: "a", ConversationID: id, CreatedByTurn: id,
		CaseRef: turn.CaseRef{Workflow: "w", CaseID: "c"}, Kind: turn.KindBoolean, Status: turn.InteractionActive, CreatedAt: ctx0}
	entry := turn.JournalEntry{CommandID: id, AccountID: "a", IdempotencyKey: "k", TurnID: id, CaseRef: card.CaseRef,
		CommandType: "t", Status: turn.JournalPending, CreatedAt: ctx0}
	batch := turn.EventBatch{AccountID: "a", CaseKey: key, CommandID: id, Revision: 1,
		Events: []turn.NewEvent{{EventID: id, EventType: "e", OccurredAt: ctx0}}}
	outbox := turn.OutboxEntry{OutboxID: id, CommandID: id, Destination: "d", IdempotencyKey: "k", Status: turn.OutboxPending, CreatedAt: ctx0}
	user := turn.UserTurn{ReceivedAt: ctx0, Input: turn.TurnInput{TurnID: id, ConversationID: id, Actor: turn.Actor{AccountID: "a"}}}
	e := func(_ any, err error) error { return err }
	return map[string]func(context.Context) error{
		"LoadConversation":  func(ctx context.Context) error { return e(s.Conversations.LoadConversation(ctx, "a", id)) },
		"ListConversations": func(ctx context.Context) error { return e(s.Conversations.ListConversations(ctx, "a", 1)) },
		"LoadRecentTurns":   func(ctx context.Context) error { return e(s.Conversations.LoadRecentTurns(ctx, "a", id, 1)) },
		"LoadTurn":          func(ctx context.Context) error { return e(s.Conversations.LoadTurn(ctx, "a", id)) },
		"TurnPhase":         func(ctx context.Context) error { return e(s.Conversations.TurnPhase(ctx, "a", id)) },
		"ListUnfinishedTurns": func(ctx context.Context) error {
			return e(s.Conversations.ListUnfinishedTurns(ctx, turn.AllAccounts(), 1))
		},
		"CreateConversation": func(ctx context.Context) error {
			return s.Conversations.CreateConversation(ctx, turn.Conversation{ID: id, AccountID: "a", CreatedAt: ctx0})
		},
		"AppendUserTurn": func(ctx context.Context) error { return s.Conversations.AppendUserTurn(ctx, user) },
		"AppendAssistantTurn": func(ctx context.Context) error {
			return s.Conversations.AppendAssistantTurn(ctx, "a", turn.AssistantTurn{TurnID: id, ConversationID: id})
		},
		"SetTurnPhase": func(ctx context.Context) error {
			return e(s.Conversations.SetTurnPhase(ctx, "a", id, turn.PhaseReduced))
		},
		"LoadInteraction":         func(ctx context.Context) error { return e(s.Interactions.LoadInteraction(ctx, "a", id)) },
		"InteractionsForTurn":     func(ctx context.Context) error { return e(s.Interactions.InteractionsForTurn(ctx, "a", id)) },
		"ListOpenForConversation": func(ctx context.Context) error { return e(s.Interactions.ListOpenForConversation(ctx, "a", id)) },
		"ListOpenForCase":         func(ctx context.Context) error { return e(s.Interactions.ListOpenForCase(ctx, "a", key)) },
		"BlockingAnsweredAt":      func(ctx context.Context) error { return e(s.Interactions.BlockingAnsweredAt(ctx, "a", key, 1)) },
		"InsertInteraction":       func(ctx context.Context) error { return s.Interactions.InsertInteraction(ctx, card) },
		"InsertReplacingBlocking": func(ctx context.Context) error { return e(s.Interactions.InsertReplacingBlocking(ctx, card)) },
		"BeginResolution": func(ctx context.Context) error {
			return e(s.Interactions.BeginResolution(ctx, "a", id, turn.InteractionActive, "o", id))
		},
		"FinishResolution": func(ctx context.Context) error {
			return e(s.Interactions.FinishResolution(ctx, "a", id, turn.Resolved()))
		},
		"InvalidateForCase": func(ctx context.Context) error {
			return e(s.Interactions.InvalidateForCase(ctx, "a", key, 2, turn.RevisionChanged()))
		},
		"InvalidateCaseCards": func(ctx context.Context) error {
			return e(s.Interactions.InvalidateCaseCards(ctx, "a", key, turn.CaseClosed()))
		},
		"ExpireDue":          func(ctx context.Context) error { return e(s.Interactions.ExpireDue(ctx, ctx0)) },
		"LoadCommand":        func(ctx context.Context) error { return e(s.Journal.LoadCommand(ctx, "a", id)) },
		"CommandsForTurn":    func(ctx context.Context) error { return e(s.Journal.CommandsForTurn(ctx, "a", id)) },
		"PendingForTurn":     func(ctx context.Context) error { return e(s.Journal.PendingForTurn(ctx, "a", id)) },
		"BeginCommand":       func(ctx context.Context) error { return e(s.Journal.BeginCommand(ctx, entry)) },
		"MarkExecuting":      func(ctx context.Context) error { return s.Journal.MarkExecuting(ctx, "a", id) },
		"CompleteCommand":    func(ctx context.Context) error { return s.Journal.CompleteCommand(ctx, "a", id, turn.Failed("x")) },
		"ListSince":          func(ctx context.Context) error { return e(s.Events.ListSince(ctx, "a", key, 0, 1)) },
		"ReadFrom":           func(ctx context.Context) error { return e(s.Events.ReadFrom(ctx, "a", turn.Start, 1)) },
		"LoadEvents":         func(ctx context.Context) error { return e(s.Events.LoadEvents(ctx, "a", []turn.ID{id})) },
		"CountEvents":        func(ctx context.Context) error { return e(s.Events.CountEvents(ctx, "a", key)) },
		"AppendEvents":       func(ctx context.Context) error { return e(s.Events.AppendEvents(ctx, batch)) },
		"RedactPayload":      func(ctx context.Context) error { return e(s.Events.RedactPayload(ctx, "a", id, "gdpr")) },
		"LoadOutbox":         func(ctx context.Context) error { return e(s.Outbox.LoadOutbox(ctx, id)) },
		"OutboxForCommand":   func(ctx context.Context) error { return e(s.Outbox.OutboxForCommand(ctx, id)) },
		"Enqueue":            func(ctx context.Context) error { return s.Outbox.Enqueue(ctx, outbox) },
		"ClaimDue":           func(ctx context.Context) error { return e(s.Outbox.ClaimDue(ctx, ctx0, 1, "w")) },
		"MarkCompleted":      func(ctx context.Context) error { return s.Outbox.MarkCompleted(ctx, id) },
		"MarkFailed":         func(ctx context.Context) error { return s.Outbox.MarkFailed(ctx, id, "r", time.Time{}) },
		"MarkOutcomeUnknown": func(ctx context.Context) error { return s.Outbox.MarkOutcomeUnknown(ctx, id, "") },
		"Reschedule":         func(ctx context.Context) error { return s.Outbox.Reschedule(ctx, id, ctx0) },
		"ReleaseExpiredClaims": func(ctx context.Context) error {
			return e(s.Outbox.ReleaseExpiredClaims(ctx, ctx0))
		},
		"LoadReplay":             func(ctx context.Context) error { return e(s.Replay.LoadReplay(ctx, "a", id)) },
		"ReplaysForConversation": func(ctx context.Context) error { return e(s.Replay.ReplaysForConversation(ctx, "a", id, 1)) },
		"PutReplay": func(ctx context.Context) error {
			return s.Replay.PutReplay(ctx, turn.ReceivedReplay(id, id, "a", ctx0))
		},
		"Commit": func(ctx context.Context) error { return e(s.Commits.Commit(ctx, "a", turn.Bundle{})) },
	}
}

// reached runs f and reports whether it got as far as the backend (which panics).
func reached(f func() error) (err error, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return f(), false
}

// The calls above are well-formed: each one gets past the front to the backend.
func TestWellFormedCallsReachTheBackend(t *testing.T) {
	s := turn.NewStores(unreachable{})
	for name, call := range calls(s) {
		if _, panicked := reached(func() error { return call(t.Context()) }); !panicked {
			t.Errorf("%s did not reach the backend", name)
		}
	}
	if n := len(calls(s)); n != 47 {
		t.Fatalf("%d calls, want one per method of the seven roles (47)", n)
	}
}

// After Close, every call is ErrClosed and none reaches the backend, through every copy of the
// Stores and their read-only view; the backend is closed once.
func TestClosedStoresReachNoBackend(t *testing.T) {
	b := &closingBackend{}
	s := turn.NewStores(b)
	view := s.ReadOnly()
	copied := s
	if err := copied.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil || b.closes != 1 {
		t.Fatalf("second Close = %v, backend closed %d times, want once", err, b.closes)
	}
	for name, call := range calls(s) {
		err, panicked := reached(func() error { return call(t.Context()) })
		if panicked || !errors.Is(err, turn.ErrClosed) {
			t.Errorf("%s after Close: %v (reached the backend: %v), want ErrClosed", name, err, panicked)
		}
	}
	if _, err := view.Events.ReadFrom(t.Context(), "a", turn.Start, 1); !errors.Is(err, turn.ErrClosed) {
		t.Errorf("the read-only view after Close: %v, want ErrClosed", err)
	}
	if err := (turn.Stores{}).Close(); err != nil {
		t.Errorf("closing Stores assembled by hand: %v", err)
	}
}

type closingBackend struct {
	unreachable
	closes int
}

func (c *closingBackend) Close() error { c.closes++; return nil }

func TestBackendIsTheOneGiven(t *testing.T) {
	b := &closingBackend{}
	if got := turn.NewStores(b).Backend(); got != b {
		t.Fatalf("Backend() = %v, want the backend given to NewStores", got)
	}
	if (turn.Stores{}).Backend() != nil {
		t.Fatal("Stores assembled by hand have a backend")
	}
	ro := turn.NewStores(b).ReadOnly()
	for _, r := range []any{ro.Conversations, ro.Interactions, ro.Journal, ro.Events, ro.Outbox, ro.Replay} {
		if _, ok := r.(turn.Backend); ok {
			t.Fatalf("a read-only role %T is a Backend", r)
		}
	}
}

// recorder is a backend that keeps the arguments it was given and answers with canned results.
type recorder struct {
	unreachable
	conv    turn.Conversation
	batch   turn.EventBatch
	bundle  turn.Bundle
	expire  time.Time
	answer  turn.Conversation
	page    turn.EventPage
	receipt turn.Receipt
}

func (r *recorder) CreateConversation(_ context.Context, c turn.Conversation) error {
	r.conv = c
	return nil
}

func (r *recorder) AppendEvents(_ context.Context, b turn.EventBatch) ([]turn.ID, error) {
	r.batch = b
	return nil, nil
}

func (r *recorder) Commit(_ context.Context, _ string, b turn.Bundle) (turn.Receipt, error) {
	r.bundle = b
	return r.receipt, nil
}

func (r *recorder) ExpireDue(_ context.Context, now time.Time) ([]turn.ID, error) {
	r.expire = now
	return nil, nil
}

func (r *recorder) LoadConversation(context.Context, string, turn.ID) (turn.Conversation, error) {
	return r.answer, nil
}

func (r *recorder) ReadFrom(_ context.Context, _ string, after turn.Cursor, limit int) (turn.EventPage, error) {
	var p turn.EventPage
	for _, e := range r.page.Events {
		if e.Sequence > int64(after) && len(p.Events) < limit {
			p.Events = append(p.Events, e)
		}
	}
	return p, nil
}

// Arguments reach the backend in UTC at microsecond precision, with empty documents nil, and the
// caller's values are left as they were.
func TestArgumentsReachTheBackendNormalised(t *testing.T) {
	ctx := t.Context()
	r := &recorder{}
	s := turn.NewStores(r)
	zone := time.FixedZone("CET", 3600)
	local := time.Date(2026, 3, 1, 9, 40, 0, 123456789, zone)
	want := time.Date(2026, 3, 1, 8, 40, 0, 123456000, time.UTC)

	if err := s.Conversations.CreateConversation(ctx, turn.Conversation{ID: turn.NewID(), AccountID: "a", CreatedAt: local, Metadata: json.RawMessage{}}); err != nil {
		t.Fatal(err)
	}
	if r.conv.CreatedAt != want || r.conv.Metadata != nil {
		t.Fatalf("the backend got created at %v and metadata %#v, want %v and nil", r.conv.CreatedAt, r.conv.Metadata, want)
	}

	batch := turn.EventBatch{AccountID: "a", CaseKey: turn.CaseKey{Workflow: "w", CaseID: "c"}, CommandID: turn.NewID(), Revision: 1,
		Events: []turn.NewEvent{{EventID: turn.NewID(), EventType: "e", OccurredAt: local}}}
	if _, err := s.Events.AppendEvents(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if r.batch.Events[0].OccurredAt != want || batch.Events[0].OccurredAt != local {
		t.Fatalf("the backend got %v (want %v); the caller's batch now says %v", r.batch.Events[0].OccurredAt, want, batch.Events[0].OccurredAt)
	}

	replay := turn.ReceivedReplay(turn.NewID(), turn.NewID(), "a", local)
	bundle := turn.Bundle{Events: []turn.EventBatch{batch}, ReplayRecord: &replay}
	if _, err := s.Commits.Commit(ctx, "a", bundle); err != nil {
		t.Fatal(err)
	}
	if r.bundle.Events[0].Events[0].OccurredAt != want || r.bundle.ReplayRecord.RecordedAt != want || replay.RecordedAt != local {
		t.Fatalf("the bundle reached the backend as %+v; the caller's replay record says %v", r.bundle, replay.RecordedAt)
	}

	if _, err := s.Interactions.ExpireDue(ctx, local); err != nil || r.expire != want {
		t.Fatalf("ExpireDue passed %v (%v), want %v", r.expire, err, want)
	}
}

// Results come back in UTC at microsecond precision, required documents as null, lists non-nil.
func TestResultsComeBackNormalised(t *testing.T) {
	ctx := t.Context()
	zone := time.FixedZone("CET", 3600)
	r := &recorder{answer: turn.Conversation{ID: turn.NewID(), AccountID: "a", CreatedAt: time.Date(2026, 3, 1, 9, 40, 0, 123456789, zone)}}
	s := turn.NewStores(r)
	got, err := s.Conversations.LoadConversation(ctx, "a", r.answer.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.CreatedAt.Location() != time.UTC || got.CreatedAt.Nanosecond() != 123456000 || string(got.Metadata) != "null" {
		t.Fatalf("loaded %+v", got)
	}
	receipt, err := s.Commits.Commit(ctx, "a", turn.Bundle{})
	if err != nil || receipt.EventIDs == nil || receipt.InsertedInteractions == nil || receipt.InvalidatedInteractions == nil {
		t.Fatalf("receipt %#v, %v: want non-nil lists", receipt, err)
	}
	page, err := s.Events.ReadFrom(ctx, "a", turn.Start, 5)
	if err != nil || page.Events == nil || page.Next != turn.Start {
		t.Fatalf("empty page %#v, %v", page, err)
	}
}

// ReadFrom takes exactly the cursors a read can produce: Start and the sequence of one of the
// account's events.
func TestReadFromTakesOnlyProducedCursors(t *testing.T) {
	ctx := t.Context()
	r := &recorder{}
	for _, seq := range []int64{3, 5, 9} {
		r.page.Events = append(r.page.Events, turn.Event{Sequence: seq, EventID: turn.NewID(), AccountID: "a"})
	}
	s := turn.NewStores(r)
	tests := []struct {
		after turn.Cursor
		limit int
		want  []int64 // nil: ErrInvalid
		next  turn.Cursor
	}{
		{turn.Start, 2, []int64{3, 5}, 5},
		{3, 1, []int64{5}, 5},
		{5, 10, []int64{9}, 9},
		{9, 10, []int64{}, 9},
		{9, 0, []int64{}, 9},
		{3, 0, []int64{5, 9}, 9}, // 0 asks for DefaultLimit
		{turn.Start, turn.MaxLimit, []int64{3, 5, 9}, 9},
		{3, turn.MaxLimit + 1, nil, 0}, // above MaxLimit
		{4, 10, nil, 0},                // between two events
		{10, 10, nil, 0},               // past the end
		{1 << 62, 10, nil, 0},
		{-1, 10, nil, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("after_%d_limit_%d", tt.after, tt.limit), func(t *testing.T) {
			page, err := s.Events.ReadFrom(ctx, "a", tt.after, tt.limit)
			if tt.want == nil {
				if !errors.Is(err, turn.ErrInvalid) {
					t.Fatalf("ReadFrom = %+v, %v; want ErrInvalid", page, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var seqs []int64
			for _, e := range page.Events {
				seqs = append(seqs, e.Sequence)
			}
			if fmt.Sprint(seqs) != fmt.Sprint(tt.want) || page.Next != tt.next {
				t.Fatalf("ReadFrom = %v next %d, want %v next %d", seqs, page.Next, tt.want, tt.next)
			}
		})
	}
}
