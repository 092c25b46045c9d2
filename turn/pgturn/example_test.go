package pgturn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/pgturn"
)

// Open a pool, put the turn store on it, and commit one turn's step as a bundle. (Examples here
// need a PostgreSQL server, so they are compiled but not run by go test; the tests prove the same
// behaviour.)
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, os.Getenv("DATABASE_URL"), pgdb.Config{
		MaxConns:         16,
		StatementTimeout: 5 * time.Second, // generous enough for the largest bundle of a turn
	})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()                                               // the application's pool: the turn store never closes it
	stores, err := pgturn.New(ctx, pool, pgturn.WithSchema("turns")) // migrates: safe on every start-up
	if err != nil {
		log.Fatal(err)
	}

	account, conv, turnID := "aurora", turn.NewID(), turn.NewID()
	now := time.Now()
	if err := stores.Conversations.CreateConversation(ctx, turn.Conversation{ID: conv, AccountID: account, CreatedAt: now}); err != nil {
		log.Fatal(err)
	}
	if err := stores.Conversations.AppendUserTurn(ctx, turn.UserTurn{ReceivedAt: now, Input: turn.TurnInput{
		TurnID: turnID, ConversationID: conv, Actor: turn.Actor{AccountID: account, UserID: "ada"},
		Text: "move my train to 9:40"}}); err != nil {
		log.Fatal(err)
	}
	receipt, err := stores.Commits.Commit(ctx, account, turn.Bundle{
		Events: []turn.EventBatch{{AccountID: account, CaseKey: turn.CaseKey{Workflow: "trip", CaseID: "t-42"},
			CommandID: turn.NewID(), Revision: 2, Events: []turn.NewEvent{{EventID: turn.NewID(),
				EventType: "trip.departure_changed", OccurredAt: now, Payload: json.RawMessage(`{"departure":"09:40"}`)}}}},
		TurnPhase: &turn.PhaseUpdate{TurnID: turnID, Phase: turn.PhaseCommitted},
	})
	if err != nil {
		log.Fatal(err) // nothing of the bundle was written, unless errors.Is(err, turn.ErrTimeout)
	}
	fmt.Println(len(receipt.EventIDs), "event committed")
}

// Enlist the bundle in the application's own transaction, so that the application's tables and
// the turn store change together or not at all.
func ExampleBackend_CommitIn() {
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, os.Getenv("DATABASE_URL"), pgdb.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	stores, err := pgturn.New(ctx, pool)
	if err != nil {
		log.Fatal(err)
	}
	var bundle turn.Bundle // built by the turn's step

	tx, err := pool.Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback(ctx) // a no-op once committed
	if _, err := tx.Exec(ctx, `UPDATE bookings SET departure = '09:40' WHERE id = 't-42'`); err != nil {
		log.Fatal(err)
	}
	// The escape hatch to the backend: CommitIn checks the bundle exactly as Commit does.
	if _, err := stores.Backend().(*pgturn.Backend).CommitIn(ctx, tx, "aurora", bundle); err != nil {
		log.Fatal(err) // the bundle left nothing in tx; the booking update is still there
	}
	if err := tx.Commit(ctx); err != nil {
		log.Fatal(err)
	}
}
