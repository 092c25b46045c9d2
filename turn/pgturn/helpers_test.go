package pgturn_test

import (
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/pgturn"
)

var epoch = time.Unix(0, 0).UTC()

func at(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }

// store is a backend behind its checked front, with the pool and schema it runs on.
type store struct {
	turn.Stores
	pool   *pgxpool.Pool
	schema string
}

// backend returns the backend behind the front, for CommitIn.
func (s store) backend() *pgturn.Backend { return s.Backend().(*pgturn.Backend) }

// newStore returns a store on a fresh, migrated schema of its own, dropped when t ends.
func newStore(t testing.TB, opts ...pgturn.Option) store {
	t.Helper()
	return newStoreOn(t, pgdbtest.Pool(t), pgdbtest.Schema(t), opts...)
}

// newStoreOn returns a store on pool and schema, migrating it.
func newStoreOn(t testing.TB, pool *pgxpool.Pool, schema string, opts ...pgturn.Option) store {
	t.Helper()
	stores, err := pgturn.New(t.Context(), pool, append([]pgturn.Option{pgturn.WithSchema(schema)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return store{Stores: stores, pool: pool, schema: schema}
}

// twoStores returns two stores on one fresh, migrated schema, each on a pool of its own: two
// independent sets of connections, as two processes would have, so a race between them is a
// race between real transactions.
func twoStores(t *testing.T) (store, store, string) {
	t.Helper()
	schema := pgdbtest.Schema(t)
	first := newStoreOn(t, pgdbtest.Pool(t), schema)
	return first, newStoreOn(t, pgdbtest.Pool(t), schema, pgturn.WithoutMigrate()), schema
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
