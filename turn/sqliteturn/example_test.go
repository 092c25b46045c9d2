package sqliteturn_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/sqliteturn"
)

// The turn store on a file the application opens and owns; other components may keep their
// tables in the same file.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sqliteturn-example")
	defer os.RemoveAll(dir)
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: filepath.Join(dir, "stead.db")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	stores, err := sqliteturn.New(ctx, db)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stores.Close() // leaves db open

	conv := turn.Conversation{ID: turn.NewID(), AccountID: "acme", CreatedAt: time.Now()}
	if err := stores.Conversations.CreateConversation(ctx, conv); err != nil {
		fmt.Println(err)
		return
	}
	batch := turn.EventBatch{AccountID: "acme", CaseKey: turn.CaseKey{Workflow: "trip", CaseID: "lyon"},
		CommandID: turn.NewID(), Revision: 1, Events: []turn.NewEvent{
			{EventID: turn.NewID(), EventType: "trip.booked", OccurredAt: time.Now(), Payload: []byte(`{"train":"9:40"}`)},
		}}
	receipt, err := stores.Commits.Commit(ctx, "acme", turn.Bundle{Events: []turn.EventBatch{batch}})
	if err != nil {
		fmt.Println(err)
		return
	}
	page, _ := stores.Events.ReadFrom(ctx, "acme", turn.Start, 10)
	fmt.Println(len(receipt.EventIDs), "event committed;", page.Events[0].EventType, string(page.Events[0].Payload))
	// Output: 1 event committed; trip.booked {"train":"9:40"}
}
