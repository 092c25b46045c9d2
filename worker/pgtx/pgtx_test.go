package pgtx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/worker"
	"github.com/steadhq/stead/worker/pgtx"
)

// TestNewRefuses checks that only a pgstore store and a pgtransport transport on one pool make a
// shared database: anything else would run the "shared" transaction on one side only.
func TestNewRefuses(t *testing.T) {
	ctx := context.Background()
	schema := pgdbtest.Schema(t)
	open := func() *stead.Store {
		pool, err := pgdb.Open(ctx, pgdbtest.URL(), pgdb.Config{MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		s, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s1, s2 := open(), open()
	pool := s2.Backend().(*pgstore.Backend).Pool()
	tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	mem, memtr := memstore.New(), memtransport.New()
	t.Cleanup(func() { mem.Close(); memtr.Close() })
	for _, c := range []struct {
		name string
		err  func() error
	}{
		{"memory store", func() error { _, err := pgtx.New(mem, tr); return err }},
		{"memory transport", func() error { _, err := pgtx.New(s2, memtr); return err }},
		{"two pools", func() error { _, err := pgtx.New(s1, tr); return err }},
		{"nil store", func() error { _, err := pgtx.New(nil, tr); return err }},
	} {
		if err := c.err(); !errors.Is(err, stead.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", c.name, err)
		}
	}
	if _, err := pgtx.New(s2, tr); err != nil {
		t.Fatalf("one pool: %v", err)
	}
}

// openShared opens a store and a transport on pool in schema, closed when the test ends, and the
// shared transaction over them.
func openShared(t testing.TB, pool *pgxpool.Pool, schema string) (*pgtx.DB, *stead.Store, *transport.Transport) {
	t.Helper()
	ctx := context.Background()
	s, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema(schema), pgtransport.WithoutListen())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	db, err := pgtx.New(s, tr)
	if err != nil {
		t.Fatal(err)
	}
	return db, s, tr
}

// setup opens a store and a transport on one pool in a fresh schema, with one execution at
// version 1 and one message for it.
func setup(t testing.TB) (*pgtx.DB, *stead.Store, *transport.Transport, *stead.Execution) {
	t.Helper()
	ctx := context.Background()
	schema := pgdbtest.Schema(t)
	pool, err := pgdb.Open(ctx, pgdbtest.URL(), pgdb.Config{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db, s, tr := openShared(t, pool, schema)
	now := time.Now().UTC().Truncate(time.Microsecond)
	exe := &stead.Execution{ID: "e1", DefinitionID: "d", Status: stead.StatusRunning, CreatedAt: now, UpdatedAt: now}
	c, err := s.Commit(ctx, exe, stead.Bundle{})
	if err != nil {
		t.Fatal(err)
	}
	exe.Version = c.Version
	if err := tr.Publish(ctx, "e1", stead.Event{ID: "ev1", Kind: "tick", CreatedAt: now}, 0); err != nil {
		t.Fatal(err)
	}
	return db, s, tr, exe
}

// claimOne begins a transaction with a deadline and claims the one message in it.
func claimOne(t *testing.T, db *pgtx.DB) (worker.Tx, transport.Lease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	ls, _, err := tx.Claim(ctx, "w", 30*time.Second, 0, 8, 1)
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim: %v %v", ls, err)
	}
	return tx, ls[0]
}

// TestStepCommitsInItsRoundTrip checks the pipelined step: a step that wins commits the step
// and the ack at once (Commit has nothing left to do), and one that loses its compare-and-swap
// commits nothing, not even the ack queued behind it: the message is claimable again.
func TestStepCommitsInItsRoundTrip(t *testing.T) {
	ctx := context.Background()
	t.Run("won", func(t *testing.T) {
		db, s, tr, exe := setup(t)
		tx, l := claimOne(t, db)
		next := exe.Clone()
		next.ActivePath = "b"
		res, err := tx.Step(ctx, stead.CommitItem{Execution: next, Bundle: stead.Bundle{ProcessedEventID: l.Event.ID}}, nil, &l)
		if err != nil || res.Err != nil || res.Version != exe.Version+1 {
			t.Fatalf("step: %+v %v", res, err)
		}
		// Visible to others before Commit: the step's round trip committed.
		got, err := s.Load(ctx, "e1")
		if err != nil || got.Version != exe.Version+1 || got.ActivePath != "b" {
			t.Fatalf("load after step: %+v %v", got, err)
		}
		if done, err := s.IsProcessed(ctx, "e1", "ev1"); err != nil || !done {
			t.Fatalf("processed: %v %v", done, err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatalf("commit after a won step: %v", err)
		}
		if ls, err := tr.ClaimBatch(ctx, "other", time.Minute, 0, 8); err != nil || len(ls) != 0 {
			t.Fatalf("the acked message is still there: %v %v", ls, err)
		}
	})
	t.Run("lost", func(t *testing.T) {
		db, s, tr, exe := setup(t)
		tx, l := claimOne(t, db)
		stale := exe.Clone()
		stale.Version-- // loses the compare-and-swap
		stale.ActivePath = "lost"
		res, err := tx.Step(ctx, stead.CommitItem{Execution: stale, Bundle: stead.Bundle{ProcessedEventID: l.Event.ID}}, nil, &l)
		if err != nil || !errors.Is(res.Err, stead.ErrConflict) {
			t.Fatalf("step: %+v %v, want a conflict in the result", res, err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatalf("rollback: %v", err)
		}
		got, err := s.Load(ctx, "e1")
		if err != nil || got.Version != exe.Version || got.ActivePath != "" {
			t.Fatalf("the lost step wrote: %+v %v", got, err)
		}
		if done, err := s.IsProcessed(ctx, "e1", "ev1"); err != nil || done {
			t.Fatalf("processed after a lost step: %v %v", done, err)
		}
		ls, err := tr.ClaimBatch(ctx, "other", time.Minute, 0, 8)
		if err != nil || len(ls) != 1 || ls[0].Event.ID != "ev1" {
			t.Fatalf("the message of a lost step was acked: %v %v", ls, err)
		}
	})
}

// TestAckTravelsWithCommit checks that an ack waits for the COMMIT: nothing is acked before it,
// and a rollback keeps the message.
func TestAckTravelsWithCommit(t *testing.T) {
	ctx := context.Background()
	for _, commit := range []bool{true, false} {
		db, _, tr, _ := setup(t)
		tx, l := claimOne(t, db)
		if err := tx.Ack(ctx, []transport.Lease{l}); err != nil {
			t.Fatal(err)
		}
		if commit {
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		} else if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		ls, err := tr.ClaimBatch(ctx, "other", time.Minute, 0, 8)
		if err != nil || len(ls) != map[bool]int{true: 0, false: 1}[commit] {
			t.Fatalf("commit %v: claimable afterwards %v %v", commit, ls, err)
		}
	}
}

// TestBeginSendsNothing checks that a transaction that sent no statement commits and rolls back
// without a round trip, and gives its connection back.
func TestBeginSendsNothing(t *testing.T) {
	ctx := context.Background()
	db, _, _, _ := setup(t)
	for range 10 { // more than the pool's 4 connections: each must go back
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHungTransactionEnds checks the timeouts that travel with the lazy BEGIN: a transaction
// whose client goes quiet past its deadline is ended by the server, and the message it claimed
// is claimable again without waiting for its lease.
func TestHungTransactionEnds(t *testing.T) {
	db, _, tr, _ := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if ls, _, err := tx.Claim(ctx, "w", time.Hour, 0, 8, 1); err != nil || len(ls) != 1 {
		t.Fatalf("claim: %v %v", ls, err)
	}
	// The client hangs: it sends nothing, and its context is not what ends the transaction.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ls, err := tr.ClaimBatch(context.Background(), "other", time.Minute, 0, 8)
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the hung transaction still holds its group after 10 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSettlesOnlyItsOwnClaims checks that a transaction acks and nacks the leases of its own
// claims (held: the row lock is their lease), refuses a lease claimed elsewhere (which its held
// ack would settle without the token fence) with nothing queued, and that a Nack with a delay
// parks the group past the commit.
func TestSettlesOnlyItsOwnClaims(t *testing.T) {
	ctx := context.Background()
	db, _, tr, _ := setup(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	if err := tr.Publish(ctx, "e2", stead.Event{ID: "ev2", Kind: "tick", CreatedAt: now}, 0); err != nil {
		t.Fatal(err)
	}
	if err := tr.Publish(ctx, "e3", stead.Event{ID: "ev3", Kind: "tick", CreatedAt: now}, 0); err != nil {
		t.Fatal(err)
	}
	outside, err := tr.ClaimBatch(ctx, "outside", time.Minute, 0, 1) // e1's message, leased and committed
	if err != nil || len(outside) != 1 || outside[0].Group != "e1" {
		t.Fatalf("claim outside: %v %v", outside, err)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	own, _, err := tx.Claim(ctx, "w", time.Minute, 0, 8, 1)
	if err != nil || len(own) != 2 || own[0].Group != "e2" || own[1].Group != "e3" {
		t.Fatalf("claim in the transaction: %v %v; want e2 and e3 (e1 is leased)", own, err)
	}
	if err := tx.Ack(ctx, []transport.Lease{own[0], outside[0]}); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("ack of a lease claimed outside: %v, want ErrInvalid", err)
	}
	if err := tx.Nack(ctx, &outside[0], 0); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("nack of a lease claimed outside: %v, want ErrInvalid", err)
	}
	if err := tx.Ack(ctx, own[:1]); err != nil {
		t.Fatal(err)
	}
	if err := tx.Nack(ctx, &own[1], time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// e2 is acked and e3 parked for a minute by the nack; e1 is still leased outside.
	if ls, err := tr.ClaimBatch(ctx, "other", time.Minute, 0, 8); err != nil || len(ls) != 0 {
		t.Fatalf("claimable after the commit: %v %v; want nothing", ls, err)
	}
	if err := tr.AckBatch(ctx, outside); err != nil { // its own lease still holds it
		t.Fatalf("ack of the outside lease by its owner: %v", err)
	}
	if err := tr.Nack(ctx, &own[1], 0); err != nil { // the park is an ordinary lease of own[1]'s token
		t.Fatal(err)
	}
	if ls, err := tr.ClaimBatch(ctx, "other", time.Minute, 0, 8); err != nil || len(ls) != 1 || ls[0].Event.ID != "ev3" {
		t.Fatalf("after ending the park: %v %v; want ev3", ls, err)
	}
}

// TestClientSendThroughSender checks worker.Client.Send with pgtx as its Sender: one statement
// refuses an execution that does not exist (ErrNotFound, nothing published) and publishes to an
// idle execution, whose queue the transport no longer holds, at the execution's own priority.
func TestClientSendThroughSender(t *testing.T) {
	ctx := context.Background()
	db, s, tr, exe := setup(t)
	hi := &stead.Execution{ID: "hi", DefinitionID: "d", Status: stead.StatusRunning, Priority: 5,
		CreatedAt: exe.CreatedAt, UpdatedAt: exe.UpdatedAt}
	if _, err := s.Commit(ctx, hi, stead.Bundle{}); err != nil {
		t.Fatal(err)
	}
	c := &worker.Client{Store: s, Transport: tr, Sender: db}
	if _, err := c.Send(ctx, "ghost", stead.Event{Kind: "tick"}); !errors.Is(err, stead.ErrNotFound) {
		t.Fatalf("send to a missing execution: %v, want ErrNotFound", err)
	}
	if _, err := c.Send(ctx, "hi", stead.Event{Kind: "tick", Data: []byte("{")}); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("send of bad data: %v, want ErrInvalid", err)
	}
	ev, err := c.Send(ctx, "hi", stead.Event{Kind: "tick"})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := tr.ClaimBatch(ctx, "w", time.Minute, 5, 10)
	if err != nil || len(ls) != 1 || ls[0].Group != "hi" || ls[0].Priority != 5 || ls[0].Event.ID != ev.ID {
		t.Fatalf("claim at priority 5: %+v %v, want the send to hi at 5", ls, err)
	}
	// What is left is e1's own message: the send to ghost published nothing, and e1 (whose
	// stored document has no priority) is at 0.
	ls, err = tr.ClaimBatch(ctx, "w", time.Minute, 0, 10)
	if err != nil || len(ls) != 1 || ls[0].Group != "e1" || ls[0].Priority != 0 {
		t.Fatalf("claim of the rest: %+v %v, want e1's one message", ls, err)
	}
	if _, err := c.Send(ctx, "e1", stead.Event{Kind: "tick"}); err != nil {
		t.Fatalf("send to e1: %v", err)
	}
}

// TestClientCreatesInOneTransaction checks that a Client whose Sender is a pgtx.DB creates
// through it: the executions and their queued starts land together, no outbox row is left for
// the relay, a taken id is ErrAlreadyExists with nothing published for it, and bad input writes
// nothing.
func TestClientCreatesInOneTransaction(t *testing.T) {
	ctx := context.Background()
	db, store, tr, _ := setup(t) // e1 exists already, without a start
	client := &worker.Client{Store: store, Transport: tr, Sender: db}
	exes, err := client.CreateBatch(ctx, []worker.NewExecution{
		{DefinitionID: "d", ID: "n1", Priority: 3}, {DefinitionID: "d", ID: "n2"},
	})
	if err != nil || len(exes) != 2 {
		t.Fatalf("create: %v %v", exes, err)
	}
	if es, err := store.PendingOutbox(ctx, "", 100); err != nil || len(es) != 0 {
		t.Fatalf("outbox after create: %v %v; want nothing left for the relay", es, err)
	}
	ls, err := tr.ClaimBatch(ctx, "w", time.Minute, 3, 8)
	if err != nil || len(ls) != 1 || ls[0].Group != "n1" || ls[0].Event.ID != worker.StartEventID("n1") {
		t.Fatalf("claim at priority 3: %v %v; want n1's start", ls, err)
	}
	ls, err = tr.ClaimBatch(ctx, "w", time.Minute, 0, 8)
	if err != nil || len(ls) != 2 || ls[1].Group != "n2" || ls[1].Event.ID != worker.StartEventID("n2") {
		t.Fatalf("claim: %v %v; want setup's e1 and n2's start", ls, err)
	}
	_, err = client.Create(ctx, "d", "n1", nil)
	if !errors.Is(err, stead.ErrAlreadyExists) {
		t.Fatalf("create of a taken id: %v, want ErrAlreadyExists", err)
	}
	if _, err := client.Create(ctx, "d", "bad\x00id", nil); !errors.Is(err, stead.ErrInvalid) {
		t.Fatalf("create of a bad id: %v, want ErrInvalid", err)
	}
	if _, err := store.Load(ctx, "bad\x00id"); !errors.Is(err, stead.ErrInvalid) && !errors.Is(err, stead.ErrNotFound) {
		t.Fatalf("load of the bad id: %v", err)
	}
}
