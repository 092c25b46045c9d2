package memturn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/memturn"
)

// One turn's whole lifecycle, as docs/turns.md tells it: the user asks to book a flight, the
// assistant admits the booking command under an idempotency key, commits its events, the card
// asking the user to confirm the seat and the notification for the airline in one bundle, and
// answers; a retry of the same request replays the recorded outcome instead of booking twice;
// the next turn answers the card, and a later command that moves the case past the card's
// revision would have retired it.
func Example_turnLifecycle() {
	ctx := context.Background()
	clock := memturn.NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	stores := memturn.New(memturn.WithClock(clock.Now)) // or sqliteturn.New(ctx, db), pgturn.New(ctx, pool)
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	const account = "acme"
	trip := turn.CaseKey{Workflow: "trip", CaseID: "t-1"} // the case the commands change

	// 1. A conversation, and the user's turn: stored with its phase marker at received.
	conv := turn.NewID()
	must(stores.Conversations.CreateConversation(ctx, turn.Conversation{ID: conv, AccountID: account, CreatedAt: clock.Now()}))
	turn1 := turn.NewID()
	must(stores.Conversations.AppendUserTurn(ctx, turn.UserTurn{ReceivedAt: clock.Now(), Input: turn.TurnInput{
		TurnID: turn1, ConversationID: conv, Actor: turn.Actor{AccountID: account, UserID: "ada"}, Text: "book the 9:40"}}))

	// 2. The assistant understood the request and decided on a command. Each phase is a
	// crash-recovery marker: a restarted process lists the unfinished turns and resumes them.
	_, err := stores.Conversations.SetTurnPhase(ctx, account, turn1, turn.PhaseInterpreted)
	must(err)
	_, err = stores.Conversations.SetTurnPhase(ctx, account, turn1, turn.PhaseReduced)
	must(err)

	// 3. The journal admits the command under its idempotency key (derived from the request, so
	// that a retried request finds it): the first admission is Fresh, and only a Fresh one
	// runs the command.
	book := turn.JournalEntry{CommandID: turn.NewID(), AccountID: account, IdempotencyKey: "ada:book:9:40",
		TurnID: turn1, CaseRef: turn.CaseRef{Workflow: trip.Workflow, CaseID: trip.CaseID, ExpectedRevision: 0},
		CommandType: "book_flight", CommandPayload: json.RawMessage(`{"flight":"9:40"}`),
		Status: turn.JournalPending, CreatedAt: clock.Now()}
	adm, err := stores.Journal.BeginCommand(ctx, book)
	must(err)
	fmt.Println("admitted fresh:", adm.Fresh)
	must(stores.Journal.MarkExecuting(ctx, account, book.CommandID))
	_, err = stores.Conversations.SetTurnPhase(ctx, account, turn1, turn.PhaseExecuting)
	must(err)

	// 4. What the command produced commits as one bundle, all or nothing: the command's outcome
	// (the case moves from revision 0 to 1), its events, a blocking card bound to revision 1,
	// a message for the airline in the outbox, and the turn's phase.
	held := turn.NewEvent{EventID: turn.NewID(), EventType: "trip.seat_held", OccurredAt: clock.Now(), Payload: json.RawMessage(`{"seat":"14C"}`)}
	card := turn.Interaction{ID: turn.NewID(), AccountID: account, ConversationID: conv, CreatedByTurn: turn1,
		CaseRef: turn.CaseRef{Workflow: trip.Workflow, CaseID: trip.CaseID, ExpectedRevision: 1},
		Kind:    turn.KindBoolean, Blocking: true, Status: turn.InteractionActive, CreatedAt: clock.Now(),
		Payload: turn.CardPayload{Title: "Take seat 14C?", Options: []turn.CardOption{{ID: "yes", Label: "Yes"}, {ID: "no", Label: "No"}}}}
	card.PayloadHash = turn.HashPayload(card.Payload)
	receipt, err := stores.Commits.Commit(ctx, account, turn.Bundle{
		JournalCompletions: []turn.JournalCompletion{{CommandID: book.CommandID, Outcome: turn.Committed(1, held.EventID)}},
		Events:             []turn.EventBatch{{AccountID: account, CaseKey: trip, CommandID: book.CommandID, Revision: 1, Events: []turn.NewEvent{held}}},
		InteractionInserts: []turn.InteractionInsert{{Interaction: card}},
		OutboxEntries: []turn.OutboxEntry{{OutboxID: turn.NewID(), CommandID: book.CommandID, Destination: "airline",
			IdempotencyKey: "hold:" + held.EventID.String(), Payload: json.RawMessage(`{"seat":"14C"}`),
			Status: turn.OutboxPending, CreatedAt: clock.Now()}},
		TurnPhase: &turn.PhaseUpdate{TurnID: turn1, Phase: turn.PhaseCommitted},
	})
	must(err)
	fmt.Println("committed:", len(receipt.EventIDs), "event,", len(receipt.InsertedInteractions), "card")

	// 5. The assistant answers; the turn is delivered, a terminal phase.
	must(stores.Conversations.AppendAssistantTurn(ctx, account, turn.AssistantTurn{TurnID: turn1, ConversationID: conv,
		Blocks: []turn.Block{{ID: "b1", Kind: "text", Body: json.RawMessage(`{"text":"Seat 14C is held. Take it?"}`)}}, Done: true}))
	_, err = stores.Conversations.SetTurnPhase(ctx, account, turn1, turn.PhaseDelivered)
	must(err)

	// 6. The same request again (a retried HTTP call, a double tap) replays what was recorded.
	again := book
	again.CommandID = turn.NewID()
	adm, err = stores.Journal.BeginCommand(ctx, again)
	must(err)
	fmt.Println("replayed:", !adm.Fresh, adm.Entry.Status, "at revision", adm.Entry.Result.NewRevision)

	// 7. The next turn answers the card: resolving, then resolved by the events its answer
	// committed (none here).
	turn2 := turn.NewID()
	must(stores.Conversations.AppendUserTurn(ctx, turn.UserTurn{ReceivedAt: clock.Now(), Input: turn.TurnInput{
		TurnID: turn2, ConversationID: conv, Actor: turn.Actor{AccountID: account, UserID: "ada"}, Text: "yes"}}))
	_, err = stores.Interactions.BeginResolution(ctx, account, card.ID, turn.InteractionActive, "yes", turn2)
	must(err)
	rec, err := stores.Interactions.FinishResolution(ctx, account, card.ID, turn.Resolved())
	must(err)
	fmt.Println("card:", rec.Interaction.Status)
	answered, err := stores.Interactions.BlockingAnsweredAt(ctx, account, trip, 1)
	must(err)
	fmt.Println("answered at revision 1:", answered)

	// 8. Everything is readable per turn and per case.
	t1, err := stores.Conversations.LoadTurn(ctx, account, turn1)
	must(err)
	events, err := stores.Events.ListSince(ctx, account, trip, 0, 10)
	must(err)
	fmt.Println("turn 1:", t1.Phase, "with", len(t1.Assistant.Blocks), "block;", "case events:", len(events), events[0].EventType)
	// Output:
	// admitted fresh: true
	// committed: 1 event, 1 card
	// replayed: true committed at revision 1
	// card: resolved
	// answered at revision 1: true
	// turn 1: delivered with 1 block; case events: 1 trip.seat_held
}
