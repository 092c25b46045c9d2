package pgturn_test

import (
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/pgturn"
)

var epoch = time.Unix(0, 0).UTC()

func at(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }

// twoStores returns two stores on one fresh, migrated schema, each on a pool of its own: two
// independent sets of connections, as two processes would have, so a race between them is a
// race between real transactions.
func twoStores(t *testing.T) (*pgturn.Store, *pgturn.Store, string) {
	t.Helper()
	schema := pgdbtest.Schema(t)
	var out [2]*pgturn.Store
	for i := range out {
		s, err := pgturn.FromPool(pgdbtest.Pool(t), pgturn.WithSchema(schema))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = s
	}
	if err := out[0].Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return out[0], out[1], schema
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

func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
