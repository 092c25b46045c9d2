package sqlitetx_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/sqlitetransport"
	"github.com/steadhq/stead/worker"
	"github.com/steadhq/stead/worker/sqlitetx"
)

// backend is a store and a transport on one SQLite file, with their finisher.
type backend struct {
	db    *sqlitedb.DB
	store *stead.Store
	tr    *transport.Transport
	fin   *sqlitetx.DB
}

func open(t *testing.T) *backend {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "stead.db"))
}

// openAt opens the backend on path (a file, or sqlitedb.Memory).
func openAt(t *testing.T, path string) *backend {
	t.Helper()
	ctx := context.Background()
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store, err := sqlitestore.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	tr, err := sqlitetransport.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	fin, err := sqlitetx.New(db, store, tr)
	if err != nil {
		t.Fatal(err)
	}
	return &backend{db: db, store: store, tr: tr, fin: fin}
}

func TestNewRefusesAnotherDatabase(t *testing.T) {
	t.Parallel()
	a, b := open(t), open(t)
	for _, c := range []struct {
		name  string
		db    *sqlitedb.DB
		store *stead.Store
		tr    *transport.Transport
	}{
		{"nil database", nil, a.store, a.tr},
		{"store of another file", a.db, b.store, a.tr},
		{"transport of another file", a.db, a.store, b.tr},
	} {
		if _, err := sqlitetx.New(c.db, c.store, c.tr); !errors.Is(err, stead.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", c.name, err)
		}
	}
}

// TestFinishCommitsAllOrNothing runs the transaction of a worker's round by hand — the commit of
// a step of "a", the publish of what it emitted to "b", the ack of the message of "a" — and
// checks that it lands whole, with the emit in the transport and none in the outbox, or, when
// it fails anywhere before COMMIT (an injected bad argument, a cancelled context), leaves the
// store and the transport as they were: the step uncommitted, nothing published, the message of
// "a" still there to be delivered again.
func TestFinishCommitsAllOrNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		// fail names the call that fails: "" none, "publish" and "ack" a refused argument,
		// "cancel" a context cancelled before COMMIT.
		fail string
	}{
		{"commits", ""},
		{"publish refused", "publish"},
		{"ack refused", "ack"},
		{"context cancelled before COMMIT", "cancel"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := open(t)
			ctx := context.Background()
			exe := &stead.Execution{ID: "a", DefinitionID: "d", Status: stead.StatusRunning, ActivePath: "d/x"}
			res, err := b.store.Commit(ctx, exe, stead.Bundle{})
			if err != nil {
				t.Fatal(err)
			}
			exe.Version = res.Version
			ping := stead.Event{ID: "ping-1", Kind: "ping"}
			if err := b.tr.Publish(ctx, "a", ping, 0); err != nil {
				t.Fatal(err)
			}
			leases, err := b.tr.ClaimBatch(ctx, "w", time.Minute, 0, 10)
			if err != nil || len(leases) != 1 {
				t.Fatalf("claim: %v, %v", leases, err)
			}

			tctx, cancel := context.WithCancel(ctx)
			defer cancel()
			tx, err := b.fin.BeginFinish(tctx)
			if err != nil {
				t.Fatal(err)
			}
			next := exe.Clone()
			next.ActivePath = "d/y"
			pong := stead.Emit{Target: "b", Event: stead.Event{ID: "pong-1", Kind: "pong"}}
			results, err := tx.CommitBatch(tctx, []stead.CommitItem{{Execution: next, Bundle: stead.Bundle{ProcessedEventID: ping.ID}}})
			if err != nil || results[0].Err != nil {
				t.Fatalf("commit: %v, %+v", err, results)
			}
			out := []transport.Outgoing{{Group: pong.Target, Event: pong.Event}}
			if c.fail == "publish" {
				out[0].Group = "" // refused: no group
			}
			err = tx.Publish(tctx, out)
			if err == nil {
				ls := leases
				if c.fail == "ack" {
					ls = []transport.Lease{leases[0]}
					ls[0].Token = "" // refused: no token
				}
				err = tx.Ack(tctx, ls)
			}
			if err == nil {
				if c.fail == "cancel" {
					cancel()
				}
				err = tx.Commit(tctx)
			}
			if c.fail != "" {
				if err == nil {
					t.Fatal("the transaction committed")
				}
				if c.fail != "cancel" && !errors.Is(err, stead.ErrInvalid) {
					t.Errorf("the refused %s returned %v, want ErrInvalid", c.fail, err)
				}
				if err := tx.Rollback(ctx); err != nil {
					t.Fatal(err)
				}
			}

			got, err := b.store.Load(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			processed, err := b.store.IsProcessed(ctx, "a", ping.ID)
			if err != nil {
				t.Fatal(err)
			}
			outbox, err := b.store.PendingOutbox(ctx, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(outbox) != 0 {
				t.Errorf("outbox holds %d rows, want none: the emit is published in the commit's transaction", len(outbox))
			}
			if c.fail == "" {
				if got.Version != results[0].Version || !processed {
					t.Errorf("after COMMIT: version %d (want %d), processed %v", got.Version, results[0].Version, processed)
				}
			} else {
				if got.Version != exe.Version || processed {
					t.Errorf("after a failed transaction: version %d (want %d, unchanged), processed %v (want false)", got.Version, exe.Version, processed)
				}
				// What the worker does when its transaction failed: hand the message back.
				if err := b.tr.Nack(ctx, &leases[0], 0); err != nil {
					t.Fatal(err)
				}
			}
			again, err := b.tr.ClaimBatch(ctx, "w2", time.Minute, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			var queued []string
			for _, l := range again {
				queued = append(queued, l.Group+":"+l.Event.ID)
			}
			want := "b:pong-1" // published with the commit; a's message acked with it
			if c.fail != "" {
				want = "a:ping-1" // nothing published, a's message delivered again
			}
			if len(queued) != 1 || queued[0] != want {
				t.Errorf("queued %v, want [%s]", queued, want)
			}
		})
	}
}

// TestBeginWaitsForTheGate: a finishing transaction holds the database's write gate, so the
// store's and the transport's own writes wait for it instead of meeting SQLite's lock, and run
// once it ends.
func TestBeginWaitsForTheGate(t *testing.T) {
	t.Parallel()
	b := open(t)
	ctx := context.Background()
	tx, err := b.fin.BeginFinish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	published := make(chan error, 1)
	go func() { published <- b.tr.Publish(ctx, "g", stead.Event{ID: "e", Kind: "k"}, 0) }()
	select {
	case err := <-published:
		t.Fatalf("a publish ran inside another transaction: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := b.fin.BeginFinish(short); !errors.Is(err, stead.ErrUnavailable) {
		t.Errorf("a second transaction while the first is open: %v, want ErrUnavailable", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-published; err != nil {
		t.Fatal(err)
	}
}

var _ worker.Finisher = (*sqlitetx.DB)(nil)
