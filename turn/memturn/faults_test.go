package memturn_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/memturn"
)

var t0 = time.Unix(0, 0).UTC()

// newStores returns checked Stores and the backend behind them, for its fault injection points.
func newStores(opts ...memturn.Option) (turn.Stores, *memturn.Backend) {
	s := memturn.New(opts...)
	return s, s.Backend().(*memturn.Backend)
}

// world is a store prepared like the bundle checks: a turn, a pending command, a resolving
// blocking card, a stale card and a replay record; bundle touches all of them.
type world struct {
	s                 turn.Stores
	b                 *memturn.Backend // the fault injection points
	account           string
	conv, turnID, cmd turn.ID
	answered, stale   turn.ID
	events, outbox    []turn.ID
	next              turn.ID
}

func card(account string, conv turn.ID, rev turn.Revision, blocking bool, at time.Time) turn.Interaction {
	return turn.Interaction{ID: turn.NewID(), AccountID: account, ConversationID: conv,
		CaseRef: turn.CaseRef{Workflow: "w", CaseID: "c", ExpectedRevision: rev}, CreatedByTurn: turn.NewID(),
		Kind: turn.KindBoolean, Blocking: blocking, Status: turn.InteractionActive, CreatedAt: at}
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := t.Context()
	w := &world{account: "acct", conv: turn.NewID(), turnID: turn.NewID(), cmd: turn.NewID()}
	w.s, w.b = newStores(memturn.WithClock(memturn.NewManualClock(t0).Now))
	s := w.s
	must(t, s.Conversations.CreateConversation(ctx, turn.Conversation{ID: w.conv, AccountID: w.account, CreatedAt: t0}))
	must(t, s.Conversations.AppendUserTurn(ctx, turn.UserTurn{ReceivedAt: t0, Input: turn.TurnInput{TurnID: w.turnID, ConversationID: w.conv,
		Actor: turn.Actor{AccountID: w.account}}}))
	_, err := s.Journal.BeginCommand(ctx, turn.JournalEntry{CommandID: w.cmd, AccountID: w.account, IdempotencyKey: "k", TurnID: w.turnID,
		CaseRef: turn.CaseRef{Workflow: "w", CaseID: "c", ExpectedRevision: 1}, CommandType: "t", Status: turn.JournalPending, CreatedAt: t0})
	must(t, err)
	answered := card(w.account, w.conv, 1, true, t0)
	must(t, s.Interactions.InsertInteraction(ctx, answered))
	_, err = s.Interactions.BeginResolution(ctx, w.account, answered.ID, turn.InteractionActive, "yes", w.turnID)
	must(t, err)
	stale := card(w.account, w.conv, 1, false, t0.Add(time.Second))
	must(t, s.Interactions.InsertInteraction(ctx, stale))
	must(t, s.Replay.PutReplay(ctx, turn.ReceivedReplay(w.turnID, w.conv, w.account, t0)))
	w.answered, w.stale = answered.ID, stale.ID
	w.events = []turn.ID{turn.NewID(), turn.NewID()}
	w.outbox = []turn.ID{turn.NewID()}
	return w
}

func (w *world) bundle() turn.Bundle {
	next := card(w.account, w.conv, 2, true, t0.Add(2*time.Second))
	w.next = next.ID
	replay := turn.ReceivedReplay(w.turnID, w.conv, w.account, t0.Add(2*time.Second))
	replay.Phase = turn.PhaseCommitted
	var evs []turn.NewEvent
	for _, id := range w.events {
		evs = append(evs, turn.NewEvent{EventID: id, EventType: "e", OccurredAt: t0, Payload: json.RawMessage(`{"a":1}`)})
	}
	return turn.Bundle{
		JournalCompletions: []turn.JournalCompletion{{CommandID: w.cmd, Outcome: turn.Committed(2, w.events...)}},
		Events: []turn.EventBatch{{AccountID: w.account, CaseKey: turn.CaseKey{Workflow: "w", CaseID: "c"}, CommandID: w.cmd,
			Revision: 2, Events: evs}},
		InteractionFinishes:      []turn.InteractionFinish{{InteractionID: w.answered, Outcome: turn.Resolved(w.events...)}},
		InteractionInvalidations: []turn.CaseInvalidation{{CaseKey: turn.CaseKey{Workflow: "w", CaseID: "c"}, NewRevision: 2, Reason: turn.RevisionChanged()}},
		InteractionInserts:       []turn.InteractionInsert{{Interaction: next, ReplaceBlocking: true}},
		OutboxEntries: []turn.OutboxEntry{{OutboxID: w.outbox[0], CommandID: w.cmd, Destination: "d", IdempotencyKey: "k",
			Status: turn.OutboxPending, CreatedAt: t0}},
		ReplayRecord: &replay,
		TurnPhase:    &turn.PhaseUpdate{TurnID: w.turnID, Phase: turn.PhaseCommitted},
	}
}

// snapshot reads everything the bundle can touch, through the public API.
func (w *world) snapshot(t *testing.T) map[string]any {
	t.Helper()
	ctx := t.Context()
	s := w.s
	snap := map[string]any{}
	get := func(name string, v any, err error) {
		if err != nil && !errors.Is(err, turn.ErrNotFound) {
			t.Fatalf("%s: %v", name, err)
		}
		snap[name] = v
		snap[name+" err"] = err != nil
	}
	e, err := s.Journal.LoadCommand(ctx, w.account, w.cmd)
	get("command", e, err)
	evs, err := s.Events.ReadFrom(ctx, w.account, turn.Start, 100)
	get("stream", evs, err)
	for _, id := range []turn.ID{w.answered, w.stale, w.next} {
		rec, err := s.Interactions.LoadInteraction(ctx, w.account, id)
		get("card "+id.String(), rec, err)
	}
	open, err := s.Interactions.ListOpenForCase(ctx, w.account, turn.CaseKey{Workflow: "w", CaseID: "c"})
	get("open", open, err)
	ob, err := s.Outbox.LoadOutbox(ctx, w.outbox[0])
	get("outbox", ob, err)
	rp, err := s.Replay.LoadReplay(ctx, w.account, w.turnID)
	get("replay", rp, err)
	ph, err := s.Conversations.TurnPhase(ctx, w.account, w.turnID)
	get("phase", ph, err)
	return snap
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A failure after any stage of a bundle leaves no trace of it, and the same bundle then lands,
// with the sequences a never-failed store would have handed out.
func TestBundleRollsBackAfterEveryStage(t *testing.T) {
	t.Parallel()
	points := []memturn.Point{memturn.AfterJournalInsertBeforeCommit, memturn.AfterCommitBeforeEventReadback, memturn.AfterInteractionPersistence}
	for step := 1; step <= memturn.BundleSteps; step++ {
		points = append(points, memturn.AfterBundleStep(step))
	}
	for _, p := range points {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			b := w.bundle()
			before := w.snapshot(t)
			injected := errors.New("injected")
			w.b.FailNext(p, injected)
			if _, err := w.s.Commits.Commit(t.Context(), w.account, b); !errors.Is(err, injected) {
				t.Fatalf("Commit = %v, want the injected failure", err)
			}
			if after := w.snapshot(t); !reflect.DeepEqual(before, after) {
				t.Fatalf("state changed by a failed bundle:\nbefore %v\nafter  %v", before, after)
			}
			if n := len(w.b.ArmedFailures()); n != 0 {
				t.Fatalf("%d failures still armed", n)
			}
			r, err := w.s.Commits.Commit(t.Context(), w.account, b)
			if err != nil {
				t.Fatalf("Commit after the failure: %v", err)
			}
			page, err := w.s.Events.ReadFrom(t.Context(), w.account, turn.Start, 10)
			must(t, err)
			if len(page.Events) != 2 || page.Events[0].Sequence != 1 || page.Events[1].Sequence != 2 {
				t.Fatalf("a rolled-back append consumed sequences: %+v", page.Events)
			}
			if len(r.InvalidatedInteractions) != 1 || r.InvalidatedInteractions[0] != w.stale {
				t.Fatalf("receipt invalidated %v, want [stale]", r.InvalidatedInteractions)
			}
		})
	}
}

// A bundle that creates an account's first rows and fails leaves no shard behind: the account
// still has nothing, and a later bundle for it starts clean.
func TestFailedBundleLeavesNoAccountBehind(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := memturn.New()
	batch := turn.EventBatch{AccountID: "fresh", CaseKey: turn.CaseKey{Workflow: "w", CaseID: "c"}, CommandID: turn.NewID(), Revision: 1,
		Events: []turn.NewEvent{{EventID: turn.NewID(), EventType: "e", OccurredAt: t0}}}
	_, err := s.Commits.Commit(ctx, "fresh", turn.Bundle{Events: []turn.EventBatch{batch}, TurnPhase: &turn.PhaseUpdate{TurnID: turn.NewID(), Phase: turn.PhaseFailed}})
	if !errors.Is(err, turn.ErrNotFound) {
		t.Fatalf("Commit = %v", err)
	}
	page, err := s.Events.ReadFrom(ctx, "fresh", turn.Start, 10)
	must(t, err)
	if len(page.Events) != 0 {
		t.Fatal("events of a failed bundle are visible")
	}
	if _, err := s.Commits.Commit(ctx, "fresh", turn.Bundle{Events: []turn.EventBatch{batch}}); err != nil {
		t.Fatal(err)
	}
}

func TestStandaloneFaultPoints(t *testing.T) {
	t.Parallel()
	injected := errors.New("injected")
	tests := []struct {
		point memturn.Point
		call  func(t *testing.T, w *world) error
		// after checks what a failure at the point left behind.
		after func(t *testing.T, w *world)
	}{
		{memturn.BeforeJournalInsert, func(t *testing.T, w *world) error {
			ctx := t.Context()
			_, err := w.s.Journal.BeginCommand(ctx, entry(w, w.outbox[0], "fresh-key"))
			return err
		}, func(t *testing.T, w *world) {
			if _, err := w.s.Journal.LoadCommand(t.Context(), w.account, w.outbox[0]); !errors.Is(err, turn.ErrNotFound) {
				t.Fatalf("the entry was written before the journal insert: %v", err)
			}
		}},
		{memturn.AfterJournalInsertBeforeCommit, func(t *testing.T, w *world) error {
			ctx := t.Context()
			_, err := w.s.Journal.BeginCommand(ctx, entry(w, w.outbox[0], "fresh-key"))
			return err
		}, func(t *testing.T, w *world) {
			e, err := w.s.Journal.LoadCommand(t.Context(), w.account, w.outbox[0])
			if err != nil || e.Status != turn.JournalPending {
				t.Fatalf("the entry did not survive as pending: %v %v", e.Status, err)
			}
			adm, err := w.s.Journal.BeginCommand(t.Context(), entry(w, turn.NewID(), "fresh-key"))
			if err != nil || adm.Fresh || adm.Entry.CommandID != w.outbox[0] {
				t.Fatalf("a retry after the crash is not a replay: %+v %v", adm, err)
			}
		}},
		{memturn.AfterCommitBeforeEventReadback, func(t *testing.T, w *world) error {
			ctx := t.Context()
			_, err := w.s.Events.AppendEvents(ctx, w.bundle().Events[0])
			return err
		}, func(t *testing.T, w *world) {
			evs, _ := w.s.Events.LoadEvents(t.Context(), w.account, w.events)
			if len(evs) != 2 {
				t.Fatalf("the appended events did not stay: %d", len(evs))
			}
		}},
		{memturn.AfterInteractionPersistence, func(t *testing.T, w *world) error {
			ctx := t.Context()
			return w.s.Interactions.InsertInteraction(ctx, cardWithID(w, w.outbox[0]))
		}, func(t *testing.T, w *world) {
			if _, err := w.s.Interactions.LoadInteraction(t.Context(), w.account, w.outbox[0]); err != nil {
				t.Fatalf("the inserted card did not stay: %v", err)
			}
		}},
		{memturn.BeforeResponsePersistence, func(t *testing.T, w *world) error {
			ctx := t.Context()
			return w.s.Conversations.AppendAssistantTurn(ctx, w.account, turn.AssistantTurn{TurnID: w.turnID, ConversationID: w.conv})
		}, func(t *testing.T, w *world) {
			tr, err := w.s.Conversations.LoadTurn(t.Context(), w.account, w.turnID)
			if err != nil || tr.Assistant != nil {
				t.Fatalf("the assistant turn was written: %v", err)
			}
		}},
		{memturn.BeforeOutboxDispatch, func(t *testing.T, w *world) error {
			ctx := t.Context()
			must(t, w.s.Outbox.Enqueue(ctx, outboxRow(w)))
			_, err := w.s.Outbox.ClaimDue(ctx, t0, 10, "worker")
			return err
		}, func(t *testing.T, w *world) {
			rec, _ := w.s.Outbox.LoadOutbox(t.Context(), w.outbox[0])
			if rec.Entry.Status != turn.OutboxPending || rec.Entry.AttemptCount != 0 {
				t.Fatalf("the row was claimed: %+v", rec.Entry)
			}
		}},
		{memturn.AfterOutboxDispatch, func(t *testing.T, w *world) error {
			ctx := t.Context()
			must(t, w.s.Outbox.Enqueue(ctx, outboxRow(w)))
			if _, err := w.s.Outbox.ClaimDue(ctx, t0, 10, "worker"); err != nil {
				return err
			}
			return w.s.Outbox.MarkCompleted(ctx, w.outbox[0])
		}, func(t *testing.T, w *world) {
			rec, _ := w.s.Outbox.LoadOutbox(t.Context(), w.outbox[0])
			if rec.Entry.Status != turn.OutboxDispatching || rec.Claim == nil || rec.Claim.WorkerID != "worker" {
				t.Fatalf("the row is not left dispatching with its claim: %+v", rec)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.point), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			w.b.FailNext(tt.point, injected)
			if got := w.b.ArmedFailures()[tt.point]; got != 1 {
				t.Fatalf("armed %d", got)
			}
			if err := tt.call(t, w); !errors.Is(err, injected) {
				t.Fatalf("call = %v, want the injected failure", err)
			}
			tt.after(t, w)
		})
	}
}

func TestFailuresFireInOrderAndClear(t *testing.T) {
	t.Parallel()
	s, b := newStores()
	first, second := errors.New("first"), errors.New("second")
	b.FailNext(memturn.BeforeOutboxDispatch, first)
	b.FailNext(memturn.BeforeOutboxDispatch, second)
	for _, want := range []error{first, second, nil} {
		if _, err := s.Outbox.ClaimDue(t.Context(), t0, 1, "w"); err != want {
			t.Fatalf("ClaimDue = %v, want %v", err, want)
		}
	}
	b.FailNext(memturn.BeforeJournalInsert, first)
	b.ClearFailures()
	if n := len(b.ArmedFailures()); n != 0 {
		t.Fatalf("%d points armed after ClearFailures", n)
	}
}

func entry(w *world, cmd turn.ID, key string) turn.JournalEntry {
	return turn.JournalEntry{CommandID: cmd, AccountID: w.account, IdempotencyKey: key, TurnID: w.turnID,
		CaseRef: turn.CaseRef{Workflow: "w", CaseID: "c"}, CommandType: "t", Status: turn.JournalPending, CreatedAt: t0}
}

func cardWithID(w *world, id turn.ID) turn.Interaction {
	c := card(w.account, w.conv, 1, false, t0)
	c.ID = id
	return c
}

func outboxRow(w *world) turn.OutboxEntry {
	return turn.OutboxEntry{OutboxID: w.outbox[0], CommandID: w.cmd, Destination: "d", IdempotencyKey: "k",
		Status: turn.OutboxPending, CreatedAt: t0}
}
