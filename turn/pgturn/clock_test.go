package pgturn_test

import (
	"testing"
	"time"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/pgturn"
)

// Every time the store stamps comes from the clock it was given, in UTC at microsecond
// precision, and reads back equal.
func TestStoreClock(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 9, 40, 0, 123456789, time.FixedZone("CET", 3600))
	want := now.UTC().Truncate(time.Microsecond)
	s := newStore(t, pgturn.WithClock(func() time.Time { return now }))
	ctx := t.Context()
	f := newBundleFixture(t, s)
	f.bundle.TurnPhase = &turn.PhaseUpdate{TurnID: f.turnID, Phase: turn.PhaseCommitted}
	receipt, err := s.Commits.Commit(ctx, f.account, f.bundle)
	must(t, err, "commit")
	if receipt.CommittedAt != want {
		t.Fatalf("receipt stamped %v, want %v", receipt.CommittedAt, want)
	}
	m, err := s.Conversations.TurnPhase(ctx, f.account, f.turnID)
	must(t, err, "phase")
	if m.UpdatedAt != want {
		t.Fatalf("phase stamped %v, want %v", m.UpdatedAt, want)
	}
	r, err := s.Events.RedactPayload(ctx, f.account, f.bundle.Events[0].Events[0].EventID, "erasure-request")
	must(t, err, "redact")
	if r.RedactedAt != want {
		t.Fatalf("redaction stamped %v, want %v", r.RedactedAt, want)
	}
	rec, err := s.Interactions.BeginResolution(ctx, f.account, f.card.ID, turn.InteractionActive, "yes", f.turnID)
	must(t, err, "begin")
	if rec.Interaction.ResolvedAt != want {
		t.Fatalf("resolution stamped %v, want %v", rec.Interaction.ResolvedAt, want)
	}
	back, err := s.Interactions.LoadInteraction(ctx, f.account, f.card.ID)
	must(t, err, "load")
	if back.Interaction.ResolvedAt != want || back.Interaction.CreatedAt != f.card.CreatedAt.UTC() {
		t.Fatalf("read back resolved %v created %v", back.Interaction.ResolvedAt, back.Interaction.CreatedAt)
	}
}

// Caller-supplied times come back as the store keeps them: UTC, microseconds.
func TestCallerTimesReadBackAtMicroseconds(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	created := time.Date(2026, 3, 1, 9, 40, 0, 123456789, time.FixedZone("CET", 3600))
	c := card("acct", turn.NewID(), turn.CaseRef{Workflow: "trip", CaseID: "c", ExpectedRevision: 1}, created)
	c.ExpiresAt = created.Add(time.Hour)
	must(t, s.Interactions.InsertInteraction(ctx, c), "insert")
	rec, err := s.Interactions.LoadInteraction(ctx, "acct", c.ID)
	must(t, err, "load")
	if rec.Interaction.CreatedAt != turn.ClockTime(created) || rec.Interaction.ExpiresAt != turn.ClockTime(c.ExpiresAt) {
		t.Fatalf("read back created %v expires %v, want %v and %v", rec.Interaction.CreatedAt,
			rec.Interaction.ExpiresAt, turn.ClockTime(created), turn.ClockTime(c.ExpiresAt))
	}
}
