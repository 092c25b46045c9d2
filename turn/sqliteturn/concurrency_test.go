package sqliteturn_test

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/sqliteturn"
)

// The races below run two stores on one file, each on a DB handle with a write gate of its own,
// so that only the file's lock decides them, as between two processes (process_test.go runs the
// admission and claim races in a real second process too).

const rounds = 16

// Many requests carrying one idempotency key arrive at once through two handles: exactly one is
// admitted fresh, and every other replays that one's command.
func TestRaceJournalAdmission(t *testing.T) {
	t.Parallel()
	s1, s2, _ := twoStores(t)
	ctx := t.Context()
	const callers = 16
	for round := range rounds / 4 {
		key := fmt.Sprintf("charge-traveler-%d", round)
		var mu sync.Mutex
		var fresh []turn.ID
		replayed := map[turn.ID]int{}
		fns := make([]func(), callers)
		for i := range fns {
			s := s1
			if i%2 == 1 {
				s = s2
			}
			fns[i] = func() {
				a, err := s.Journal.BeginCommand(ctx, journalEntry("acct", key, at(i)))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					t.Errorf("begin: %v", err)
				case a.Fresh:
					fresh = append(fresh, a.Entry.CommandID)
				default:
					replayed[a.Entry.CommandID]++
				}
			}
		}
		race(fns...)
		if len(fresh) != 1 {
			t.Fatalf("round %d: %d fresh admissions, want exactly 1", round, len(fresh))
		}
		if len(replayed) != 1 || replayed[fresh[0]] != callers-1 {
			t.Fatalf("round %d: replays %v, want %d of %v", round, replayed, callers-1, fresh[0])
		}
	}
}

// Two dispatchers, each on its own handle, drain one outbox in small claims. No row is handed to
// both, and together they claim every row.
func TestRaceOutboxClaim(t *testing.T) {
	t.Parallel()
	s1, s2, _ := twoStores(t)
	ctx := t.Context()
	const rows = 40
	cmd := turn.NewID()
	for i := range rows {
		must(t, s1.Outbox.Enqueue(ctx, outboxEntry(cmd, "claim-race", fmt.Sprintf("key-%d", i), at(i))), "enqueue")
	}
	var mu sync.Mutex
	claimedBy := map[turn.ID]string{}
	var errs [2]error
	drain := func(s turn.Stores, worker string, slot int) func() {
		return func() {
			for {
				batch, err := s.Outbox.ClaimDue(ctx, at(100), 3, worker)
				if err != nil || len(batch) == 0 {
					errs[slot] = err
					return
				}
				mu.Lock()
				for _, e := range batch {
					if prev, dup := claimedBy[e.OutboxID]; dup {
						errs[slot] = fmt.Errorf("row %s claimed by %s and %s", e.OutboxID, prev, worker)
					}
					claimedBy[e.OutboxID] = worker
				}
				mu.Unlock()
			}
		}
	}
	race(drain(s1, "worker-1", 0), drain(s2, "worker-2", 1))
	must(t, errors.Join(errs[:]...), "drain")
	if len(claimedBy) != rows {
		t.Fatalf("%d rows claimed, want %d", len(claimedBy), rows)
	}
	for id, worker := range claimedBy {
		rec, err := s1.Outbox.LoadOutbox(ctx, id)
		must(t, err, "load")
		if rec.Entry.Status != turn.OutboxDispatching || rec.Entry.AttemptCount != 1 || rec.Claim == nil || rec.Claim.WorkerID != worker {
			t.Fatalf("row %s after the race: %+v (claimed by %s)", id, rec, worker)
		}
	}
}

// Two commits moving one case to the same new revision race to retire its stale card: exactly
// one retires it, every round.
func TestRaceRevisionInvalidation(t *testing.T) {
	t.Parallel()
	s1, s2, _ := twoStores(t)
	ctx := t.Context()
	conv := turn.NewID()
	for round := range rounds {
		ref := turn.CaseRef{Workflow: "trip", CaseID: fmt.Sprintf("case-%d", round), ExpectedRevision: 1}
		c := card("acct", conv, ref, at(round))
		must(t, s1.Interactions.InsertInteraction(ctx, c), "insert")
		var got [2][]turn.ID
		var errs [2]error
		race(
			func() {
				got[0], errs[0] = s1.Interactions.InvalidateForCase(ctx, "acct", ref.Key(), 2, turn.RevisionChanged())
			},
			func() {
				got[1], errs[1] = s2.Interactions.InvalidateForCase(ctx, "acct", ref.Key(), 2, turn.RevisionChanged())
			},
		)
		must(t, errors.Join(errs[:]...), "invalidate")
		if n := len(got[0]) + len(got[1]); n != 1 {
			t.Fatalf("round %d: %d cards retired in total (%v, %v), want exactly 1", round, n, got[0], got[1])
		}
	}
}

// A double click through two handles: exactly one answer begins resolving, the other is
// ErrConflict.
func TestRaceBeginResolution(t *testing.T) {
	t.Parallel()
	s1, s2, _ := twoStores(t)
	ctx := t.Context()
	conv := turn.NewID()
	for round := range rounds {
		ref := turn.CaseRef{Workflow: "trip", CaseID: fmt.Sprintf("case-%d", round), ExpectedRevision: 1}
		c := card("acct", conv, ref, at(round))
		must(t, s1.Interactions.InsertInteraction(ctx, c), "insert")
		var errs [2]error
		race(
			func() {
				_, errs[0] = s1.Interactions.BeginResolution(ctx, "acct", c.ID, turn.InteractionActive, "yes", turn.NewID())
			},
			func() {
				_, errs[1] = s2.Interactions.BeginResolution(ctx, "acct", c.ID, turn.InteractionActive, "yes", turn.NewID())
			},
		)
		wins := 0
		for _, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, turn.ErrConflict):
				t.Fatalf("round %d: loser got %v, want ErrConflict", round, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d answers began resolving (%v), want exactly 1", round, wins, errs)
		}
	}
}

// Two erasures of one event race with different authorities: both get the first record, and it
// is the one stored.
func TestRaceRedaction(t *testing.T) {
	t.Parallel()
	s1, s2, _ := twoStores(t)
	ctx := t.Context()
	key := turn.CaseKey{Workflow: "trip", CaseID: "c"}
	for round := range rounds / 2 {
		ids, err := s1.Events.AppendEvents(ctx, eventBatch("acct", key, turn.Revision(round+1), 1, at(round)))
		must(t, err, "append")
		var got [2]turn.Redaction
		var errs [2]error
		race(
			func() { got[0], errs[0] = s1.Events.RedactPayload(ctx, "acct", ids[0], "gdpr-ticket-1") },
			func() { got[1], errs[1] = s2.Events.RedactPayload(ctx, "acct", ids[0], "gdpr-ticket-2") },
		)
		must(t, errors.Join(errs[:]...), "redact")
		if got[0] != got[1] {
			t.Fatalf("round %d: the racers got different records: %+v, %+v", round, got[0], got[1])
		}
		evs, err := s2.Events.LoadEvents(ctx, "acct", ids)
		must(t, err, "load")
		if len(evs) != 1 || evs[0].Redaction == nil || *evs[0].Redaction != got[0] || string(evs[0].Payload) != "null" {
			t.Fatalf("round %d: stored event %+v, want redaction %+v", round, evs, got[0])
		}
	}
}

// rawFile opens the file as another program would, with nothing of this module's plumbing: a
// write through it goes around the adapter entirely.
func rawFile(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// The one-open-blocking-card rule is the file's, not the adapter's: the adapter refuses a second
// blocking card with ErrConflict, and a raw INSERT that goes around it fails on the partial
// unique index, by name. A non-blocking card and a card on another case are free; a resolving
// card still holds the slot; a resolved one frees it.
func TestBlockingSlotIsKeptByTheFile(t *testing.T) {
	t.Parallel()
	s, path := newStore(t)
	ctx := t.Context()
	conv := turn.NewID()
	ref := turn.CaseRef{Workflow: "trip", CaseID: "slot", ExpectedRevision: 1}
	first := card("acct", conv, ref, at(0))
	must(t, s.Interactions.InsertInteraction(ctx, first), "first blocking card")
	if err := s.Interactions.InsertInteraction(ctx, card("acct", conv, ref, at(1))); !errors.Is(err, turn.ErrConflict) {
		t.Fatalf("second blocking card through the adapter: %v, want ErrConflict", err)
	}
	raw := rawFile(t, path)
	insert := func(id turn.ID, caseID string, blocking bool) error {
		_, err := raw.ExecContext(ctx, `INSERT INTO turn_interactions (account_id, interaction_id, conversation_id,
			workflow_key, case_id, case_revision, kind, blocking, revision_independent, payload_hash, interaction,
			status, created_at) VALUES ('acct', ?, ?, 'trip', ?, 1, 'confirm_command', ?, 0, 'hash', '{}', 'active', 0)`,
			id.String(), conv.String(), caseID, blocking)
		return err
	}
	err := insert(turn.NewID(), "slot", true)
	if err == nil || !strings.Contains(err.Error(), "turn_interactions") {
		t.Fatalf("raw second blocking card: %v, want the blocking index to refuse it", err)
	}
	if !strings.Contains(err.Error(), "UNIQUE") {
		t.Fatalf("raw second blocking card: %v, want a UNIQUE constraint failure", err)
	}
	must(t, insert(turn.NewID(), "slot", false), "raw non-blocking card on the case")
	must(t, insert(turn.NewID(), "other-case", true), "raw blocking card on another case")
	_, err = s.Interactions.BeginResolution(ctx, "acct", first.ID, turn.InteractionActive, "yes", turn.NewID())
	must(t, err, "begin")
	if err := insert(turn.NewID(), "slot", true); err == nil {
		t.Fatal("a resolving card must still hold the slot against a raw insert")
	}
	_, err = s.Interactions.FinishResolution(ctx, "acct", first.ID, turn.Resolved())
	must(t, err, "finish")
	must(t, insert(turn.NewID(), "slot", true), "raw blocking card once the slot is free")
}

// A bundle is invisible to another connection while its transaction is open, whether it is about
// to commit or to roll back, and a bundle that failed leaves nothing behind.
func TestBundleVisibility(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		failLast  bool
		wantSaved bool
	}{
		{"committed bundle appears only at commit", false, true},
		{"rolled back bundle never appears", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, path := newStore(t)
			other := storeOn(t, openDB(t, path)) // a second connection on the file
			ctx := t.Context()
			conv, turnID := turn.NewID(), turn.NewID()
			must(t, s.Conversations.CreateConversation(ctx, turn.Conversation{ID: conv, AccountID: "acct", CreatedAt: at(0)}), "conversation")
			must(t, s.Conversations.AppendUserTurn(ctx, turn.UserTurn{Input: turn.TurnInput{TurnID: turnID, ConversationID: conv,
				Actor: turn.Actor{AccountID: "acct", UserID: "ada"}, Text: "book it"}, ReceivedAt: at(1)}), "turn")
			key := turn.CaseKey{Workflow: "trip", CaseID: "visible"}
			c := card("acct", conv, turn.CaseRef{Workflow: key.Workflow, CaseID: key.CaseID, ExpectedRevision: 1}, at(2))
			entry := outboxEntry(turn.NewID(), "mailer", "bundle-"+tt.name, at(2))
			replay := turn.ReceivedReplay(turnID, conv, "acct", at(2))
			phaseTurn := turnID
			if tt.failLast {
				phaseTurn = turn.NewID() // never appended: the last item fails
			}
			bundle := turn.Bundle{
				Events:             []turn.EventBatch{eventBatch("acct", key, 1, 3, at(2))},
				InteractionInserts: []turn.InteractionInsert{{Interaction: c}},
				OutboxEntries:      []turn.OutboxEntry{entry},
				ReplayRecord:       &replay,
				TurnPhase:          &turn.PhaseUpdate{TurnID: phaseTurn, Phase: turn.PhaseCommitted},
			}
			var watched []string
			sqliteturn.SetInTx(s.Backend().(*sqliteturn.Backend), func() {
				watched = seen(t, other, c.ID, key, entry.OutboxID, turnID)
			})
			_, err := s.Commits.Commit(ctx, "acct", bundle)
			sqliteturn.SetInTx(s.Backend().(*sqliteturn.Backend), nil)
			if tt.failLast != (err != nil) {
				t.Fatalf("commit: %v", err)
			}
			if tt.failLast && !errors.Is(err, turn.ErrNotFound) {
				t.Fatalf("commit of a bundle naming an unknown turn: %v, want ErrNotFound", err)
			}
			if len(watched) != 0 {
				t.Fatalf("while the bundle's transaction was open, another connection saw %v", watched)
			}
			after := seen(t, other, c.ID, key, entry.OutboxID, turnID)
			if tt.wantSaved && len(after) != 4 || !tt.wantSaved && len(after) != 0 {
				t.Fatalf("after the commit another connection sees %v", after)
			}
		})
	}
}

// seen lists which of the bundle's records s can read.
func seen(t *testing.T, s turn.Stores, cardID turn.ID, key turn.CaseKey, outboxID, turnID turn.ID) []string {
	t.Helper()
	ctx := t.Context()
	var out []string
	if _, err := s.Interactions.LoadInteraction(ctx, "acct", cardID); err == nil {
		out = append(out, "card")
	}
	if n, err := s.Events.CountEvents(ctx, "acct", key); err != nil || n > 0 {
		out = append(out, fmt.Sprintf("%d events (%v)", n, err))
	}
	if _, err := s.Outbox.LoadOutbox(ctx, outboxID); err == nil {
		out = append(out, "outbox row")
	}
	if _, err := s.Replay.LoadReplay(ctx, "acct", turnID); err == nil {
		out = append(out, "replay record")
	}
	return out
}
