package pgturn_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead/turn"
)

// Bad input is refused with ErrInvalid before it reaches the database: never a driver error,
// never a panic, and nothing written.
func TestBadInputIsInvalid(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	conv := turn.NewID()
	must(t, s.Conversations.CreateConversation(ctx, turn.Conversation{ID: conv, AccountID: "acct", CreatedAt: at(0)}), "conversation")
	key := turn.CaseKey{Workflow: "trip", CaseID: "c"}
	huge := json.RawMessage(`"` + strings.Repeat("x", turn.MaxPayload) + `"`)
	good := card("acct", conv, turn.CaseRef{Workflow: "trip", CaseID: "c", ExpectedRevision: 1}, at(1))
	withCard := func(mod func(*turn.Interaction)) turn.Interaction {
		c := good
		c.ID = turn.NewID()
		mod(&c)
		return c
	}
	tests := []struct {
		name string
		call func() error
	}{
		{"empty account", func() error { _, err := s.Conversations.LoadConversation(ctx, "", conv); return err }},
		{"NUL in account", func() error { _, err := s.Conversations.LoadConversation(ctx, "ac\x00ct", conv); return err }},
		{"invalid UTF-8 account", func() error { _, err := s.Conversations.LoadConversation(ctx, "ac\xffct", conv); return err }},
		{"oversized account", func() error {
			_, err := s.Conversations.LoadConversation(ctx, strings.Repeat("a", 513), conv)
			return err
		}},
		{"zero id", func() error { _, err := s.Conversations.LoadTurn(ctx, "acct", turn.ID{}); return err }},
		{"negative limit", func() error { _, err := s.Conversations.LoadRecentTurns(ctx, "acct", conv, -1); return err }},
		{"negative cursor", func() error { _, err := s.Events.ReadFrom(ctx, "acct", -1, 10); return err }},
		{"NUL in metadata", func() error {
			return s.Conversations.CreateConversation(ctx, turn.Conversation{ID: turn.NewID(), AccountID: "acct", CreatedAt: at(0), Metadata: json.RawMessage(`{"a":"\u0000"}`)})
		}},
		{"malformed metadata", func() error {
			return s.Conversations.CreateConversation(ctx, turn.Conversation{ID: turn.NewID(), AccountID: "acct", CreatedAt: at(0), Metadata: json.RawMessage(`{`)})
		}},
		{"oversized payload", func() error {
			b := eventBatch("acct", key, 1, 1, at(0))
			b.Events[0].Payload = huge
			_, err := s.Events.AppendEvents(ctx, b)
			return err
		}},
		{"empty event batch", func() error {
			_, err := s.Events.AppendEvents(ctx, turn.EventBatch{AccountID: "acct", CaseKey: key, CommandID: turn.NewID(), Revision: 1})
			return err
		}},
		{"negative revision", func() error {
			return s.Interactions.InsertInteraction(ctx, withCard(func(c *turn.Interaction) { c.CaseRef.ExpectedRevision = -1 }))
		}},
		{"card not active", func() error {
			return s.Interactions.InsertInteraction(ctx, withCard(func(c *turn.Interaction) { c.Status = turn.InteractionResolved }))
		}},
		{"unknown kind", func() error {
			return s.Interactions.InsertInteraction(ctx, withCard(func(c *turn.Interaction) { c.Kind = "telepathy" }))
		}},
		{"year 10000", func() error {
			return s.Interactions.InsertInteraction(ctx, withCard(func(c *turn.Interaction) { c.CreatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }))
		}},
		{"outbox not pending", func() error {
			e := outboxEntry(turn.NewID(), "mailer", "k", at(0))
			e.Status = turn.OutboxDispatching
			return s.Outbox.Enqueue(ctx, e)
		}},
		{"attempt count out of range", func() error {
			e := outboxEntry(turn.NewID(), "mailer", "k2", at(0))
			e.AttemptCount = math.MaxInt32 + 1
			return s.Outbox.Enqueue(ctx, e)
		}},
		{"empty worker id", func() error { _, err := s.Outbox.ClaimDue(ctx, at(0), 1, ""); return err }},
		{"empty erasure authority", func() error { _, err := s.Events.RedactPayload(ctx, "acct", turn.NewID(), ""); return err }},
		{"unknown phase", func() error {
			_, err := s.Conversations.SetTurnPhase(ctx, "acct", turn.NewID(), "teleported")
			return err
		}},
		{"bundle item of another account", func() error {
			_, err := s.Commits.Commit(ctx, "acct", turn.Bundle{Events: []turn.EventBatch{eventBatch("other", key, 1, 1, at(0))}})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, turn.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
		})
	}
	// Nothing was written by any of them.
	var rows int
	must(t, s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+s.schema+`.turn_interactions)
		+ (SELECT count(*) FROM `+s.schema+`.turn_events) + (SELECT count(*) FROM `+s.schema+`.turn_outbox)
		+ (SELECT count(*) FROM `+s.schema+`.turn_conversations) - 1`).Scan(&rows), "count")
	if rows != 0 {
		t.Fatalf("%d rows written by refused calls", rows)
	}
}

// The largest limit the Stores take reads from the start and from the last event; the backend
// itself, reached around them, saturates a huge one rather than overflow.
func TestLargestLimits(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	key := turn.CaseKey{Workflow: "trip", CaseID: "c"}
	_, err := s.Events.AppendEvents(ctx, eventBatch("acct", key, 1, 3, at(0)))
	must(t, err, "append")
	page, err := s.Events.ReadFrom(ctx, "acct", turn.Start, turn.MaxLimit)
	must(t, err, "read with the largest limit")
	if len(page.Events) != 3 {
		t.Fatalf("%d events, want 3", len(page.Events))
	}
	last := page.Next
	page, err = s.Events.ReadFrom(ctx, "acct", last, turn.MaxLimit)
	must(t, err, "read from the last event with the largest limit")
	if len(page.Events) != 0 || page.Next != last {
		t.Fatalf("page after the last event %+v", page)
	}
	if _, err := s.Outbox.ClaimDue(ctx, at(0), turn.MaxLimit, "w"); err != nil {
		t.Fatalf("claim with the largest limit: %v", err)
	}
	if _, err := s.Conversations.LoadRecentTurns(ctx, "acct", turn.NewID(), turn.MaxLimit); !errors.Is(err, turn.ErrNotFound) {
		t.Fatalf("recent turns of an unknown conversation: %v", err)
	}
	b := s.Backend()
	page, err = b.ReadFrom(ctx, "acct", turn.Start, math.MaxInt)
	must(t, err, "the backend's read with a huge limit")
	if len(page.Events) != 3 {
		t.Fatalf("the backend read %d events, want 3", len(page.Events))
	}
	if _, err := b.ReadFrom(ctx, "acct", turn.Cursor(page.Events[0].Sequence-1), math.MaxInt); err != nil {
		t.Fatalf("the backend's read from before the first event with a huge limit: %v", err)
	}
	if _, err := b.ClaimDue(ctx, at(0), math.MaxInt, "w"); err != nil {
		t.Fatalf("the backend's claim with a huge limit: %v", err)
	}
}

// CommitIn is reached around the checked front, and refuses what Commit refuses, with the same
// errors, before anything is sent: the caller's transaction holds nothing of the bundle.
func TestCommitInRunsTheFrontsChecks(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	key := turn.CaseKey{Workflow: "trip", CaseID: "c"}
	foreign := eventBatch("other", key, 1, 1, at(0))
	surrogate := eventBatch("acct", key, 1, 1, at(0))
	surrogate.Events[0].Payload = json.RawMessage(`{"name":"\ud800"}`)
	answered := card("acct", turn.NewID(), turn.CaseRef{Workflow: "trip", CaseID: "c", ExpectedRevision: 1}, at(0))
	answered.ResolvedOptionID = "yes"
	west := eventBatch("acct", key, 1, 1, time.Date(9999, 12, 31, 20, 0, 0, 0, time.FixedZone("", -5*3600)))
	tests := []struct {
		name   string
		bundle turn.Bundle
		code   string // a turn.Error code, or "" for plain ErrInvalid
	}{
		{"an event batch of another account", turn.Bundle{Events: []turn.EventBatch{foreign}}, turn.CodeBundleAccountMismatch},
		{"a payload with a lone surrogate", turn.Bundle{Events: []turn.EventBatch{surrogate}}, ""},
		{"a card inserted with an answer", turn.Bundle{InteractionInserts: []turn.InteractionInsert{{Interaction: answered}}}, turn.CodeInvalidRecord},
		{"an event in year 10000 in UTC", turn.Bundle{Events: []turn.EventBatch{west}}, ""},
		{"a phase of a zero turn", turn.Bundle{TurnPhase: &turn.PhaseUpdate{Phase: turn.PhaseCommitted}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, viaFront := s.Commits.Commit(ctx, "acct", tt.bundle)
			tx, err := s.pool.Begin(ctx)
			must(t, err, "begin")
			defer tx.Rollback(context.WithoutCancel(ctx))
			_, viaHatch := s.backend().CommitIn(ctx, tx, "acct", tt.bundle)
			for _, err := range []error{viaFront, viaHatch} {
				if !errors.Is(err, turn.ErrInvalid) || (tt.code != "" && !turn.HasCode(err, tt.code)) {
					t.Fatalf("Commit: %v; CommitIn: %v; want ErrInvalid %s from both", viaFront, viaHatch, tt.code)
				}
			}
			if viaFront.Error() != viaHatch.Error() {
				t.Fatalf("Commit says %q, CommitIn says %q", viaFront, viaHatch)
			}
			var n int
			must(t, tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+s.schema+`.turn_events)
				+ (SELECT count(*) FROM `+s.schema+`.turn_interactions)`).Scan(&n), "count in the transaction")
			if n != 0 {
				t.Fatalf("%d rows of a refused bundle in the caller's transaction", n)
			}
		})
	}
}
