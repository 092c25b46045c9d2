package pgturn_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/steadhq/stead/turn"
)

const rounds = 16

// Two commits moving the same case to the same new revision race to retire its stale card.
// Exactly one of them retires it, every round: the selection and the write are one statement, so
// the loser waits on the row lock, re-reads the card as no longer active and retires nothing.
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
		winner := got[0]
		if len(winner) == 0 {
			winner = got[1]
		}
		if winner[0] != c.ID {
			t.Fatalf("round %d: winner retired %v, want %v", round, winner, c.ID)
		}
		rec, err := s2.Interactions.LoadInteraction(ctx, "acct", c.ID)
		must(t, err, "load")
		if rec.Interaction.Status != turn.InteractionInvalidated || rec.Invalidation == nil ||
			rec.Invalidation.NewRevision == nil || *rec.Invalidation.NewRevision != 2 {
			t.Fatalf("round %d: card after the race = %+v", round, rec)
		}
	}
}

// A double click: two answers to the same active card race. Exactly one begins resolving; the
// other is told it lost (ErrConflict), every round.
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

// Many requests carrying one idempotency key arrive at once from two processes: exactly one is
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
				e := turn.JournalEntry{CommandID: turn.NewID(), AccountID: "acct", IdempotencyKey: key,
					TurnID: turn.NewID(), CaseRef: turn.CaseRef{Workflow: "trip", CaseID: "c", ExpectedRevision: 1},
					CommandType: "trip.charge", CommandPayload: []byte(`{}`), Status: turn.JournalPending, CreatedAt: at(i)}
				a, err := s.Journal.BeginCommand(ctx, e)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("begin: %v", err)
					return
				}
				if a.Fresh {
					fresh = append(fresh, a.Entry.CommandID)
				} else {
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

// Two dispatchers, each on its own pool, drain one outbox in small claims. No row is handed to
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
	drain := func(s store, worker string, slot int) func() {
		return func() {
			for {
				batch, err := s.Outbox.ClaimDue(ctx, at(100), 3, worker)
				if err != nil {
					errs[slot] = err
					return
				}
				if len(batch) == 0 {
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

// Two erasure requests for one event race with different authorities: both get the same record,
// and it is the one stored.
func TestRaceRedaction(t *testing.T) {
	t.Parallel()
	s1, s2, _ := twoStores(t)
	ctx := t.Context()
	key := turn.CaseKey{Workflow: "trip", CaseID: "c"}
	for round := range rounds / 2 {
		b := eventBatch("acct", key, turn.Revision(round+1), 1, at(round))
		_, err := s1.Events.AppendEvents(ctx, b)
		must(t, err, "append")
		id := b.Events[0].EventID
		var got [2]turn.Redaction
		var errs [2]error
		race(
			func() { got[0], errs[0] = s1.Events.RedactPayload(ctx, "acct", id, "erasure-request-1") },
			func() { got[1], errs[1] = s2.Events.RedactPayload(ctx, "acct", id, "erasure-request-2") },
		)
		must(t, errors.Join(errs[:]...), "redact")
		if got[0] != got[1] {
			t.Fatalf("round %d: the two requests got %+v and %+v, want the same record", round, got[0], got[1])
		}
		evs, err := s2.Events.LoadEvents(ctx, "acct", []turn.ID{id})
		must(t, err, "load")
		if len(evs) != 1 || evs[0].Redaction == nil || *evs[0].Redaction != got[0] || string(evs[0].Payload) != "null" {
			t.Fatalf("round %d: stored event %+v, want redaction %+v and a null payload", round, evs, got[0])
		}
	}
}

// The blocking slot is the database's rule, not the adapter's: an INSERT that goes around the
// adapter entirely is refused by the partial unique index too.
func TestBlockingSlotEnforcedByIndex(t *testing.T) {
	t.Parallel()
	s, _, schema := twoStores(t)
	ctx := t.Context()
	conv := turn.NewID()
	ref := turn.CaseRef{Workflow: "trip", CaseID: "c", ExpectedRevision: 1}
	first := card("acct", conv, ref, at(0))
	must(t, s.Interactions.InsertInteraction(ctx, first), "insert first")

	if err := s.Interactions.InsertInteraction(ctx, card("acct", conv, ref, at(1))); !errors.Is(err, turn.ErrConflict) {
		t.Fatalf("second blocking card through the adapter: %v, want ErrConflict", err)
	}
	raw := func() error {
		_, err := s.pool.Exec(ctx, `INSERT INTO `+schema+`.turn_interactions (account_id, interaction_id,
			conversation_id, workflow_key, case_id, case_revision, kind, blocking, revision_independent,
			payload_hash, interaction, status, created_at)
			VALUES ('acct', $1, $2, 'trip', 'c', 1, 'boolean', true, false, 'h', '{}', 'active', now())`,
			turn.NewID(), conv)
		return err
	}
	var pgErr *pgconn.PgError
	if err := raw(); !errors.As(err, &pgErr) || pgErr.Code != "23505" || pgErr.ConstraintName != "turn_interactions_one_open_blocking_per_case" {
		t.Fatalf("raw INSERT of a second blocking card: %v, want a unique violation of turn_interactions_one_open_blocking_per_case", err)
	}

	nb := card("acct", conv, ref, at(2))
	nb.Blocking = false
	must(t, s.Interactions.InsertInteraction(ctx, nb), "non-blocking card on the occupied case")
	must(t, s.Interactions.InsertInteraction(ctx, card("acct", conv, turn.CaseRef{Workflow: "trip", CaseID: "other", ExpectedRevision: 1}, at(3))), "blocking card on another case")
	must(t, s.Interactions.InsertInteraction(ctx, card("other-acct", conv, ref, at(4))), "blocking card of another account")

	// A resolving card still holds the slot; a resolved one frees it.
	_, err := s.Interactions.BeginResolution(ctx, "acct", first.ID, turn.InteractionActive, "yes", turn.NewID())
	must(t, err, "begin")
	if err := raw(); !errors.As(err, &pgErr) || pgErr.ConstraintName != "turn_interactions_one_open_blocking_per_case" {
		t.Fatalf("raw INSERT while the occupant is resolving: %v, want the index to refuse it", err)
	}
	_, err = s.Interactions.FinishResolution(ctx, "acct", first.ID, turn.Resolved())
	must(t, err, "finish")
	must(t, raw(), "raw INSERT once the occupant is resolved")
}

// An admission that waits on another transaction's uncommitted admission of the same key, which
// then commits, inserts nothing and cannot see the winner's row in its own snapshot: it must
// re-read and replay the winner's command, never report a second fresh admission or an error.
func TestAdmissionWaitingOnTheWinner(t *testing.T) {
	t.Parallel()
	s, other, schema := twoStores(t)
	ctx := t.Context()
	winner := turn.NewID()
	tx, err := other.pool.Begin(ctx)
	must(t, err, "begin")
	defer tx.Rollback(context.WithoutCancel(ctx))
	_, err = tx.Exec(ctx, `INSERT INTO `+schema+`.turn_journal (account_id, command_id, idempotency_key, turn_id,
		workflow_key, case_id, expected_revision, command_type, command_payload, origin, status, created_at)
		VALUES ('acct', $1, 'book-once', $2, 'trip', 'c', 1, 'trip.book', '{}', 'null', 'pending', now())`, winner, turn.NewID())
	must(t, err, "the winner's uncommitted admission")

	done := make(chan struct{})
	var a turn.Admission
	var admitErr error
	go func() {
		defer close(done)
		a, admitErr = s.Journal.BeginCommand(ctx, turn.JournalEntry{CommandID: turn.NewID(), AccountID: "acct",
			IdempotencyKey: "book-once", TurnID: turn.NewID(), CaseRef: turn.CaseRef{Workflow: "trip", CaseID: "c", ExpectedRevision: 1},
			CommandType: "trip.book", Status: turn.JournalPending, CreatedAt: at(0)})
	}()
	// Wait until the admission is blocked on the winner's row, then let the winner commit.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if time.Now().After(deadline) {
			_ = tx.Rollback(ctx)
			<-done
			t.Fatal("the admission never waited on the winner's row")
		}
		var waiting bool
		must(t, other.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%turn_journal%')`, schema).Scan(&waiting), "poll")
		if waiting {
			break
		}
		select {
		case <-done:
			t.Fatalf("the admission did not wait for the winner: %+v, %v", a, admitErr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	must(t, tx.Commit(ctx), "commit the winner")
	<-done
	if admitErr != nil || a.Fresh || a.Entry.CommandID != winner {
		t.Fatalf("admission after the winner committed: %+v, %v; want a replay of %v", a, admitErr, winner)
	}
}
