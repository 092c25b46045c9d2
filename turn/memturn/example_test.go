package memturn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/memturn"
)

// Commit a turn step as one bundle, then consume the account's event stream page by page.
func Example() {
	ctx := context.Background()
	clock := memturn.NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	stores := memturn.New(memturn.WithClock(clock.Now))

	const account = "acme"
	conv, turnID, cmd := turn.NewID(), turn.NewID(), turn.NewID()
	if err := stores.Conversations.CreateConversation(ctx, turn.Conversation{ID: conv, AccountID: account, CreatedAt: clock.Now()}); err != nil {
		panic(err)
	}
	user := turn.UserTurn{ReceivedAt: clock.Now(), Input: turn.TurnInput{
		TurnID: turnID, ConversationID: conv, Actor: turn.Actor{AccountID: account, UserID: "ada"}, Text: "book the 9:40"}}
	if err := stores.Conversations.AppendUserTurn(ctx, user); err != nil {
		panic(err)
	}

	// Everything the step produced lands together or not at all.
	var events []turn.NewEvent
	for _, typ := range []string{"trip.flight_chosen", "trip.seat_held", "trip.fare_quoted"} {
		events = append(events, turn.NewEvent{EventID: turn.NewID(), EventType: typ, OccurredAt: clock.Now(), Payload: json.RawMessage(`{}`)})
	}
	receipt, err := stores.Commits.Commit(ctx, account, turn.Bundle{
		Events: []turn.EventBatch{{AccountID: account, CaseKey: turn.CaseKey{Workflow: "trip", CaseID: "t-1"},
			CommandID: cmd, Revision: 1, Events: events}},
		TurnPhase: &turn.PhaseUpdate{TurnID: turnID, Phase: turn.PhaseCommitted},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("committed", len(receipt.EventIDs), "events")

	// Page through the stream two at a time; an empty page means caught up.
	cursor := turn.Start
	for {
		page, err := stores.Events.ReadFrom(ctx, account, cursor, 2)
		if err != nil {
			panic(err)
		}
		if len(page.Events) == 0 {
			break
		}
		for _, e := range page.Events {
			fmt.Println(e.Sequence, e.EventType)
		}
		cursor = page.Next // store it to resume later
	}
	// Output:
	// committed 3 events
	// 1 trip.flight_chosen
	// 2 trip.seat_held
	// 3 trip.fare_quoted
}
