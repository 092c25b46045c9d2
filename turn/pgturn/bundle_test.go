package pgturn_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/turn"
)

// bundleFixture is a conversation with one user turn, and a bundle that appends one event,
// inserts a card, enqueues an outbox row and records the turn's replay.
type bundleFixture struct {
	account string
	conv    turn.ID
	turnID  turn.ID
	key     turn.CaseKey
	card    turn.Interaction
	outbox  turn.OutboxEntry
	bundle  turn.Bundle
}

func newBundleFixture(t *testing.T, s store) bundleFixture {
	t.Helper()
	ctx := t.Context()
	f := bundleFixture{account: "acct", conv: turn.NewID(), turnID: turn.NewID(), key: turn.CaseKey{Workflow: "trip", CaseID: "c"}}
	must(t, s.Conversations.CreateConversation(ctx, turn.Conversation{ID: f.conv, AccountID: f.account, CreatedAt: at(0)}), "conversation")
	must(t, s.Conversations.AppendUserTurn(ctx, turn.UserTurn{Input: turn.TurnInput{TurnID: f.turnID, ConversationID: f.conv,
		Actor: turn.Actor{AccountID: f.account, UserID: "ada"}, Text: "book it"}, ReceivedAt: at(1)}), "user turn")
	f.card = card(f.account, f.conv, turn.CaseRef{Workflow: "trip", CaseID: "c", ExpectedRevision: 1}, at(2))
	f.outbox = outboxEntry(turn.NewID(), "mailer", "confirm-"+f.turnID.String(), at(2))
	replay := turn.ReceivedReplay(f.turnID, f.conv, f.account, at(2))
	f.bundle = turn.Bundle{
		Events:             []turn.EventBatch{eventBatch(f.account, f.key, 1, 1, at(2))},
		InteractionInserts: []turn.InteractionInsert{{Interaction: f.card}},
		OutboxEntries:      []turn.OutboxEntry{f.outbox},
		ReplayRecord:       &replay,
	}
	return f
}

// assertAbsent checks, through another store on another pool, that nothing of the bundle exists.
func (f bundleFixture) assertAbsent(t *testing.T, other store, when string) {
	t.Helper()
	ctx := t.Context()
	if _, err := other.Interactions.LoadInteraction(ctx, f.account, f.card.ID); !errors.Is(err, turn.ErrNotFound) {
		t.Fatalf("%s: card: %v, want ErrNotFound", when, err)
	}
	if n, err := other.Events.CountEvents(ctx, f.account, f.key); err != nil || n != 0 {
		t.Fatalf("%s: %d events (%v), want 0", when, n, err)
	}
	if _, err := other.Outbox.LoadOutbox(ctx, f.outbox.OutboxID); !errors.Is(err, turn.ErrNotFound) {
		t.Fatalf("%s: outbox row: %v, want ErrNotFound", when, err)
	}
	if _, err := other.Replay.LoadReplay(ctx, f.account, f.turnID); !errors.Is(err, turn.ErrNotFound) {
		t.Fatalf("%s: replay record: %v, want ErrNotFound", when, err)
	}
}

// A bundle applied in the application's own transaction is invisible to every other connection
// while that transaction is open, and gone once it is rolled back.
func TestCommitInInvisibleUntilCommitted(t *testing.T) {
	t.Parallel()
	s, other, _ := twoStores(t)
	ctx := t.Context()
	f := newBundleFixture(t, s)

	tx, err := s.pool.Begin(ctx)
	must(t, err, "begin")
	defer tx.Rollback(context.WithoutCancel(ctx))
	receipt, err := s.backend().CommitIn(ctx, tx, f.account, f.bundle)
	must(t, err, "commit in")
	if len(receipt.EventIDs) != 1 || len(receipt.InsertedInteractions) != 1 {
		t.Fatalf("receipt %+v", receipt)
	}
	f.assertAbsent(t, other, "while the transaction is open")
	must(t, tx.Rollback(ctx), "rollback")
	f.assertAbsent(t, other, "after rollback")

	// The same bundle in a transaction that commits lands whole, with the application's own write.
	tx, err = s.pool.Begin(ctx)
	must(t, err, "begin")
	_, err = tx.Exec(ctx, `CREATE TEMP TABLE booking (id int) ON COMMIT DROP`)
	must(t, err, "own write")
	_, err = s.backend().CommitIn(ctx, tx, f.account, f.bundle)
	must(t, err, "commit in")
	must(t, tx.Commit(ctx), "commit")
	rec, err := other.Interactions.LoadInteraction(ctx, f.account, f.card.ID)
	must(t, err, "card after commit")
	if rec.Interaction.Status != turn.InteractionActive {
		t.Fatalf("card status %q", rec.Interaction.Status)
	}
}

// A bundle that fails inside the application's transaction leaves none of itself behind and the
// transaction usable: the application's own writes still commit.
func TestCommitInFailureLeavesCallerTransactionUsable(t *testing.T) {
	t.Parallel()
	s, other, schema := twoStores(t)
	ctx := t.Context()
	f := newBundleFixture(t, s)
	_, err := s.pool.Exec(ctx, `CREATE TABLE `+schema+`.bookings (id text PRIMARY KEY)`)
	must(t, err, "create table")

	tx, err := s.pool.Begin(ctx)
	must(t, err, "begin")
	defer tx.Rollback(context.WithoutCancel(ctx))
	_, err = tx.Exec(ctx, `INSERT INTO `+schema+`.bookings VALUES ('b-1')`)
	must(t, err, "own write")
	bad := f.bundle
	bad.TurnPhase = &turn.PhaseUpdate{TurnID: turn.NewID(), Phase: turn.PhaseCommitted} // never appended
	if _, err := s.backend().CommitIn(ctx, tx, f.account, bad); !errors.Is(err, turn.ErrNotFound) {
		t.Fatalf("bundle naming an unknown turn: %v, want ErrNotFound", err)
	}
	// A SQL-level failure (the outbox key taken) aborts only the savepoint too.
	must(t, s.Outbox.Enqueue(ctx, f.outbox), "take the outbox key")
	if _, err := s.backend().CommitIn(ctx, tx, f.account, f.bundle); !errors.Is(err, turn.ErrConflict) {
		t.Fatalf("bundle with a taken outbox key: %v, want ErrConflict", err)
	}
	must(t, tx.Commit(ctx), "commit the application's own write")

	var n int
	must(t, other.pool.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.bookings`).Scan(&n), "count")
	if n != 1 {
		t.Fatalf("%d bookings, want the application's 1", n)
	}
	if _, err := other.Interactions.LoadInteraction(ctx, f.account, f.card.ID); !errors.Is(err, turn.ErrNotFound) {
		t.Fatalf("card of the failed bundles: %v, want ErrNotFound", err)
	}
	if n, err := other.Events.CountEvents(ctx, f.account, f.key); err != nil || n != 0 {
		t.Fatalf("%d events of the failed bundles (%v), want 0", n, err)
	}
}

// Commit is one transaction: a bundle whose last item fails leaves nothing, and the same bundle
// without it lands whole.
func TestCommitAtomic(t *testing.T) {
	t.Parallel()
	s, other, _ := twoStores(t)
	ctx := t.Context()
	f := newBundleFixture(t, s)
	bad := f.bundle
	bad.TurnPhase = &turn.PhaseUpdate{TurnID: turn.NewID(), Phase: turn.PhaseCommitted}
	if _, err := s.Commits.Commit(ctx, f.account, bad); !errors.Is(err, turn.ErrNotFound) {
		t.Fatalf("bundle naming an unknown turn: %v, want ErrNotFound", err)
	}
	f.assertAbsent(t, other, "after the failed commit")

	good := f.bundle
	good.TurnPhase = &turn.PhaseUpdate{TurnID: f.turnID, Phase: turn.PhaseCommitted}
	receipt, err := s.Commits.Commit(ctx, f.account, good)
	must(t, err, "commit")
	if len(receipt.EventIDs) != 1 || receipt.EventIDs[0] != good.Events[0].Events[0].EventID {
		t.Fatalf("receipt events %v", receipt.EventIDs)
	}
	if n, err := other.Events.CountEvents(ctx, f.account, f.key); err != nil || n != 1 {
		t.Fatalf("%d events (%v), want 1", n, err)
	}
	if _, err := other.Outbox.LoadOutbox(ctx, f.outbox.OutboxID); err != nil {
		t.Fatalf("outbox row: %v", err)
	}
	if _, err := other.Replay.LoadReplay(ctx, f.account, f.turnID); err != nil {
		t.Fatalf("replay record: %v", err)
	}
	m, err := other.Conversations.TurnPhase(ctx, f.account, f.turnID)
	must(t, err, "phase")
	if m.Phase != turn.PhaseCommitted || !m.UpdatedAt.Equal(receipt.CommittedAt) {
		t.Fatalf("phase marker %+v, want committed at %v", m, receipt.CommittedAt)
	}
}

// A nil transaction is bad input, not a panic.
func TestCommitInNilTransaction(t *testing.T) {
	t.Parallel()
	s, _, _ := twoStores(t)
	var tx pgx.Tx
	if _, err := s.backend().CommitIn(t.Context(), tx, "acct", turn.Bundle{}); !errors.Is(err, turn.ErrInvalid) {
		t.Fatalf("CommitIn(nil tx): %v, want ErrInvalid", err)
	}
}
