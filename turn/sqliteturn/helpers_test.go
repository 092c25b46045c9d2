package sqliteturn_test

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/sqliteturn"
)

// openDB opens the database file at path, closed when t ends.
func openDB(t testing.TB, path string) *sqlitedb.DB {
	t.Helper()
	db, err := sqlitedb.Open(t.Context(), sqlitedb.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// newStore returns a store on a fresh file of its own, and the file's path.
func newStore(t testing.TB, opts ...sqliteturn.Option) (turn.Stores, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "turns.db")
	return storeOn(t, openDB(t, path), opts...), path
}

// storeOn returns a store on db, migrating it.
func storeOn(t testing.TB, db *sqlitedb.DB, opts ...sqliteturn.Option) turn.Stores {
	t.Helper()
	s, err := sqliteturn.New(t.Context(), db, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

var epoch = time.Unix(0, 0).UTC()

func at(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }

// twoStores returns two stores on one fresh file, each on a DB handle of its own with its own
// write gate: what two processes on the file would have, so a race between them is decided by the
// file's lock, not by a gate they share.
func twoStores(t *testing.T) (turn.Stores, turn.Stores, string) {
	t.Helper()
	first, path := newStore(t)
	return first, storeOn(t, openDB(t, path)), path
}

// race runs fns at once, released together, and waits for all of them.
func race(fns ...func()) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for _, fn := range fns {
		ready.Add(1)
		done.Go(func() {
			ready.Done()
			<-start
			fn()
		})
	}
	ready.Wait()
	close(start)
	done.Wait()
}

func card(account string, conv turn.ID, ref turn.CaseRef, created time.Time) turn.Interaction {
	return turn.Interaction{
		ID: turn.NewID(), AccountID: account, ConversationID: conv, CaseRef: ref,
		CreatedByTurn: turn.NewID(), Kind: turn.KindConfirmCommand, Blocking: true,
		Payload:     turn.CardPayload{Title: "confirm", Options: []turn.CardOption{{ID: "yes", Label: "Yes"}}},
		PayloadHash: "hash", Status: turn.InteractionActive, CreatedAt: created,
	}
}

func outboxEntry(cmd turn.ID, destination, key string, created time.Time) turn.OutboxEntry {
	return turn.OutboxEntry{OutboxID: turn.NewID(), CommandID: cmd, Destination: destination,
		Payload: json.RawMessage(`{"key":"` + key + `"}`), IdempotencyKey: key,
		Status: turn.OutboxPending, CreatedAt: created}
}

func eventBatch(account string, key turn.CaseKey, rev turn.Revision, n int, occurred time.Time) turn.EventBatch {
	b := turn.EventBatch{AccountID: account, CaseKey: key, CommandID: turn.NewID(), Revision: rev}
	for i := range n {
		b.Events = append(b.Events, turn.NewEvent{EventID: turn.NewID(), EventType: "trip.updated",
			OccurredAt: occurred, Payload: json.RawMessage(`{"index":` + strconv.Itoa(i) + `,"traveler":"Ada"}`)})
	}
	return b
}

func journalEntry(account, key string, created time.Time) turn.JournalEntry {
	return turn.JournalEntry{CommandID: turn.NewID(), AccountID: account, IdempotencyKey: key,
		TurnID: turn.NewID(), CaseRef: turn.CaseRef{Workflow: "trip", CaseID: "c", ExpectedRevision: 1},
		CommandType: "trip.charge", CommandPayload: []byte(`{}`), Status: turn.JournalPending, CreatedAt: created}
}
