package memturn_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/memturn"
)

// Records come out as copies: changing one changes nothing stored.
func TestRecordsAreCopies(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := memturn.New()
	id := turn.NewID()
	batch := turn.EventBatch{AccountID: "a", CaseKey: turn.CaseKey{Workflow: "w", CaseID: "c"}, CommandID: turn.NewID(), Revision: 1,
		Events: []turn.NewEvent{{EventID: id, EventType: "e", OccurredAt: t0, Payload: json.RawMessage(`{"k":"v"}`)}}}
	if _, err := s.Events.AppendEvents(ctx, batch); err != nil {
		t.Fatal(err)
	}
	batch.Events[0].Payload[2] = 'X' // the caller reuses its buffer
	evs, err := s.Events.LoadEvents(ctx, "a", []turn.ID{id})
	if err != nil {
		t.Fatal(err)
	}
	evs[0].Payload[2] = 'Y' // and scribbles on what it got
	again, _ := s.Events.LoadEvents(ctx, "a", []turn.ID{id})
	if string(again[0].Payload) != `{"k":"v"}` {
		t.Fatalf("stored payload changed to %s", again[0].Payload)
	}
}

// Times are kept in UTC to the microsecond, as PostgreSQL keeps them.
func TestTimesAreUTCMicroseconds(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	zone := time.FixedZone("x", 3600)
	clock := memturn.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 123456789, zone))
	s := memturn.New(memturn.WithClock(clock.Now))
	c := turn.Conversation{ID: turn.NewID(), AccountID: "a", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 999999999, zone)}
	if err := s.Conversations.CreateConversation(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Conversations.LoadConversation(ctx, "a", c.ID)
	if got.CreatedAt.Location() != time.UTC || got.CreatedAt.Nanosecond() != 999999000 {
		t.Fatalf("created_at %v", got.CreatedAt)
	}
	if string(got.Metadata) != "null" {
		t.Fatalf("absent metadata reads back as %q, want null", got.Metadata)
	}
	u := turn.UserTurn{ReceivedAt: t0, Input: turn.TurnInput{TurnID: turn.NewID(), ConversationID: c.ID, Actor: turn.Actor{AccountID: "a"}}}
	if err := s.Conversations.AppendUserTurn(ctx, u); err != nil {
		t.Fatal(err)
	}
	m, _ := s.Conversations.TurnPhase(ctx, "a", u.Input.TurnID)
	if m.UpdatedAt.Location() != time.UTC || m.UpdatedAt.Nanosecond() != 123456000 {
		t.Fatalf("updated_at %v", m.UpdatedAt)
	}
	clock.Advance(time.Minute)
	m2, _ := s.Conversations.SetTurnPhase(ctx, "a", u.Input.TurnID, turn.PhaseReceived)
	if m2.UpdatedAt.Sub(m.UpdatedAt) != time.Minute {
		t.Fatalf("setting the same phase did not refresh updated_at: %v then %v", m.UpdatedAt, m2.UpdatedAt)
	}
}

// A call whose context is done writes nothing.
func TestDoneContextWritesNothing(t *testing.T) {
	t.Parallel()
	s := memturn.New()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	c := turn.Conversation{ID: turn.NewID(), AccountID: "a", CreatedAt: t0}
	if err := s.Conversations.CreateConversation(ctx, c); !errors.Is(err, context.Canceled) {
		t.Fatalf("CreateConversation = %v", err)
	}
	if _, err := s.Commits.Commit(ctx, "a", turn.Bundle{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit = %v", err)
	}
	if _, err := s.Conversations.LoadConversation(t.Context(), "a", c.ID); !errors.Is(err, turn.ErrNotFound) {
		t.Fatalf("LoadConversation = %v", err)
	}
}
