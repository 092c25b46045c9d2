package sqlitetransport_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/sqlitetransport"
	"github.com/steadhq/stead/transport/transporttest"
	"modernc.org/sqlite"
)

// openDB opens the database at path (sqlitedb.Memory for an in-memory one) with c's other
// settings, closed when the test ends, after anything the test closes itself.
func openDB(t testing.TB, path string, c sqlitedb.Config) *sqlitedb.DB {
	t.Helper()
	c.Path = path
	db, err := sqlitedb.Open(context.Background(), c)
	if err != nil {
		t.Fatalf("sqlitedb.Open(%s): %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// newOn returns a transport on db; the caller closes it.
func newOn(t testing.TB, db *sqlitedb.DB, opts ...sqlitetransport.Option) *transport.Transport {
	t.Helper()
	tr, err := sqlitetransport.New(context.Background(), db, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tr
}

// open returns a transport on a database of its own at path, as a process of its own would have;
// the caller closes the transport, the test's end the database.
func open(t testing.TB, path string, opts ...sqlitetransport.Option) *transport.Transport {
	t.Helper()
	return newOn(t, openDB(t, path, sqlitedb.Config{}), opts...)
}

func TestConformance(t *testing.T) {
	t.Parallel()
	transporttest.Run(t, func(t *testing.T, clock func() time.Time) *transport.Transport {
		tr := open(t, filepath.Join(t.TempDir(), "transport.db"), sqlitetransport.WithClock(clock))
		if !tr.CanLimit() {
			t.Fatal("the transport does not honour flows: the flow rules would not run")
		}
		return tr
	})
}

func TestConformanceInMemory(t *testing.T) {
	t.Parallel()
	transporttest.Run(t, func(t *testing.T, clock func() time.Time) *transport.Transport {
		return open(t, sqlitedb.Memory, sqlitetransport.WithClock(clock))
	})
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	closed, err := sqlitedb.Open(context.Background(), sqlitedb.Config{Path: filepath.Join(t.TempDir(), "closed.db")})
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	tests := []struct {
		name string
		db   *sqlitedb.DB
		opts []sqlitetransport.Option
		want error
	}{
		{"nil db", nil, nil, stead.ErrInvalid},
		{"zero poll", openDB(t, sqlitedb.Memory, sqlitedb.Config{}), []sqlitetransport.Option{sqlitetransport.WithPollInterval(0)}, stead.ErrInvalid},
		{"nil clock", openDB(t, sqlitedb.Memory, sqlitedb.Config{}), []sqlitetransport.Option{sqlitetransport.WithClock(nil)}, stead.ErrInvalid},
		{"closed db", closed, nil, stead.ErrClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := sqlitetransport.New(context.Background(), tc.db, tc.opts...)
			if err == nil {
				tr.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("New = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestSharesTheDBWriteGate checks that the transport's writes queue on its DB's write gate with
// those of every other component on the DB (a store, here stood for by the test holding the
// gate), that a caller's context ends that wait with nothing written, and that closing the
// transport leaves the DB open.
func TestSharesTheDBWriteGate(t *testing.T) {
	t.Parallel()
	db := openDB(t, filepath.Join(t.TempDir(), "shared.db"), sqlitedb.Config{})
	tr := newOn(t, db)
	ctx := context.Background()
	if err := db.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	err := tr.Publish(short, "G", transporttest.Event("e1"), 0)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Publish while another component writes = %v, want the deadline", err)
	}
	db.Unlock()
	if l, err := tr.Claim(ctx, "w", time.Minute, 0); err != nil || l != nil {
		t.Fatalf("Claim = %v, %v; want nothing (the publish wrote nothing)", l, err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.W.PingContext(ctx); err != nil {
		t.Fatalf("the DB was closed with the transport: %v", err)
	}
	// A second transport on the same DB finds the tables and works.
	again := newOn(t, db)
	defer again.Close()
	if err := again.Publish(ctx, "G", transporttest.Event("e2"), 0); err != nil {
		t.Fatal(err)
	}
}

// holdWriteLock takes the write lock of the file at path from a connection of its own, as
// another process would, and returns that connection: the caller ends the lock with ROLLBACK.
// The connection is closed when the test ends.
func holdWriteLock(t *testing.T, path string) *sql.Conn {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestBusyIsUnavailable holds the write lock from another connection, as another process would,
// and checks that an operation retries within the DB's busy timeout, then fails with
// ErrUnavailable having written nothing, with the SQLite error kept in the chain. A busy timeout
// of a nanosecond fails at once.
func TestBusyIsUnavailable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		busy time.Duration
		// minWait is the least time spent retrying: the busy timeout less sqlitedb.Retry's
		// largest pause (50 ms), as Retry gives up rather than sleep past its budget.
		minWait time.Duration
	}{
		{"100ms", 100 * time.Millisecond, 50 * time.Millisecond},
		{"no wait", time.Nanosecond, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "busy.db")
			tr := newOn(t, openDB(t, path, sqlitedb.Config{BusyTimeout: tc.busy}))
			defer tr.Close()
			ctx := context.Background()
			conn := holdWriteLock(t, path)
			began := time.Now()
			err := tr.Publish(ctx, "G", transporttest.Event("e1"), 0)
			if !errors.Is(err, stead.ErrUnavailable) {
				t.Fatalf("Publish while locked = %v, want ErrUnavailable", err)
			}
			if waited := time.Since(began); waited < tc.minWait {
				t.Fatalf("gave up after %v, want at least %v of retrying", waited, tc.minWait)
			}
			var se *sqlite.Error
			if !errors.As(err, &se) {
				t.Fatalf("the SQLite error is not kept in the chain: %v", err)
			}
			if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
			if l, err := tr.Claim(ctx, "w", time.Minute, 0); err != nil || l != nil {
				t.Fatalf("Claim = %v, %v; want nothing (the publish wrote nothing)", l, err)
			}
		})
	}
}

// TestBusyThenFreeSucceeds releases a lock held elsewhere while an operation retries, and checks
// that the operation then goes through.
func TestBusyThenFreeSucceeds(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "busy.db")
	tr := open(t, path) // busy timeout 5 s
	defer tr.Close()
	ctx := context.Background()
	conn := holdWriteLock(t, path)
	released := make(chan error, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		_, err := conn.ExecContext(ctx, "ROLLBACK")
		released <- err
	}()
	if err := tr.Publish(ctx, "G", transporttest.Event("e1"), 0); err != nil {
		t.Fatalf("Publish once the lock was released = %v", err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if l, err := tr.Claim(ctx, "w", time.Minute, 0); err != nil || l == nil || l.Event.ID != "e1" {
		t.Fatalf("Claim = %+v, %v; want e1", l, err)
	}
}

// TestTwoProcessesNeverShareAMessage runs claimers on two transports (two connections, as two
// processes would) on one file.
func TestTwoProcessesNeverShareAMessage(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.db")
	a, b := open(t, path), open(t, path)
	defer a.Close()
	defer b.Close()
	claimers := make([]transporttest.Claimer, 4)
	for w, tr := range []*transport.Transport{a, b, a, b} {
		claimers[w] = transporttest.Claimer{T: tr, Max: 2}
	}
	transporttest.Shared(t, 10, 10, claimers...)
}

// TestReopenKeepsMessagesAndSeqs checks that messages survive a close, and that sequence numbers
// are never reused even after every message was acked.
func TestReopenKeepsMessagesAndSeqs(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "reopen.db")
	ctx := context.Background()
	tr := open(t, path)
	for _, id := range []string{"e1", "e2"} {
		if err := tr.Publish(ctx, "G", transporttest.Event(id), 3); err != nil {
			t.Fatal(err)
		}
	}
	l, err := tr.Claim(ctx, "w", time.Minute, 0)
	if err != nil || l == nil || l.Event.ID != "e1" {
		t.Fatalf("Claim = %v, %v", l, err)
	}
	if err := tr.Ack(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	tr = open(t, path)
	defer tr.Close()
	l2, err := tr.Claim(ctx, "w", time.Minute, 3)
	if err != nil || l2 == nil || l2.Event.ID != "e2" || l2.Priority != 3 {
		t.Fatalf("Claim after reopen = %+v, %v; want e2 at priority 3", l2, err)
	}
	if err := tr.Ack(ctx, l2); err != nil {
		t.Fatal(err)
	}
	if err := tr.Publish(ctx, "G", transporttest.Event("e3"), 0); err != nil {
		t.Fatal(err)
	}
	l3, err := tr.Claim(ctx, "w", time.Minute, 0)
	if err != nil || l3 == nil || l3.Seq <= l2.Seq {
		t.Fatalf("Claim = %+v, %v; want a seq above %d", l3, err, l2.Seq)
	}
}

// TestWaitSeesAnotherProcess checks that a waiter notices a publish made through another
// connection (by polling).
func TestWaitSeesAnotherProcess(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "wait.db")
	waiter := open(t, path, sqlitetransport.WithPollInterval(10*time.Millisecond))
	defer waiter.Close()
	publisher := open(t, path)
	defer publisher.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if l, err := waiter.Claim(ctx, "w", time.Minute, 0); err != nil || l != nil {
		t.Fatalf("Claim = %v, %v; want nothing", l, err)
	}
	if err := publisher.Publish(ctx, "G", transporttest.Event("e1"), 0); err != nil {
		t.Fatal(err)
	}
	for {
		if err := waiter.Wait(ctx); err != nil {
			t.Fatalf("Wait = %v", err)
		}
		l, err := waiter.Claim(ctx, "w", time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		if l != nil {
			return
		}
	}
}

// TestContextEndsWaitForLock checks that a caller's deadline ends the wait for a lock another
// process holds, with the context's error and nothing written.
func TestContextEndsWaitForLock(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ctx.db")
	tr := open(t, path) // busy timeout 5 s
	defer tr.Close()
	conn := holdWriteLock(t, path)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := tr.Publish(ctx, "G", transporttest.Event("e1"), 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Publish past its deadline = %v, want context.DeadlineExceeded", err)
	}
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if l, err := tr.Claim(context.Background(), "w", time.Minute, 0); err != nil || l != nil {
		t.Fatalf("Claim = %v, %v; want nothing", l, err)
	}
}

// TestTwoProcessesNeverOverAdmit races claimers on two transports on one file, as two processes
// would, over keyed groups: admission is decided in each operation's write transaction, so a key
// never has more groups out than its concurrency, whichever process admitted them.
func TestTwoProcessesNeverOverAdmit(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "flows.db")
	a, b := open(t, path), open(t, path)
	defer a.Close()
	defer b.Close()
	const keys, groupsPerKey, perGroup, limit = 3, 6, 3, 2
	var msgs []transport.Outgoing
	for i := range perGroup {
		for k := range keys {
			for g := range groupsPerKey {
				grp := fmt.Sprintf("k%d-g%d", k, g)
				msgs = append(msgs, transport.Outgoing{Group: grp, Event: transporttest.Event(fmt.Sprintf("%s-%d", grp, i)),
					Flow: transport.Flow{Key: fmt.Sprintf("k%d", k), Concurrency: limit}})
			}
		}
	}
	// Half the messages through each process: both remember keys and create waiting groups.
	ctx := context.Background()
	half := len(msgs) / 2
	if err := a.PublishBatch(ctx, msgs[:half]); err != nil {
		t.Fatal(err)
	}
	if err := b.PublishBatch(ctx, msgs[half:]); err != nil {
		t.Fatal(err)
	}
	transporttest.RaceFlow(t, limit, len(msgs),
		transporttest.Claimer{T: a, Max: 4}, transporttest.Claimer{T: b, Max: 1},
		transporttest.Claimer{T: a, Max: 1}, transporttest.Claimer{T: b, Max: 8})
	for k := range keys {
		st, err := b.FlowState(ctx, fmt.Sprintf("k%d", k))
		if err != nil {
			t.Fatal(err)
		}
		if st.Admitted != 0 || st.Waiting != 0 || st.Concurrency != limit {
			t.Errorf("FlowState(k%d) after the race = %+v, want nothing admitted or waiting", k, st)
		}
	}
}

// TestWaitWakesForRateToken checks that a waiter whose process scheduled a rate token wakes when
// it is due, not at the poll interval.
func TestWaitWakesForRateToken(t *testing.T) {
	t.Parallel()
	tr := open(t, filepath.Join(t.TempDir(), "rate.db"), sqlitetransport.WithPollInterval(time.Hour))
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fl := transport.Flow{Key: "k", Rate: 1, Per: 200 * time.Millisecond}
	began := time.Now()
	for _, g := range []string{"G", "H"} {
		if err := tr.PublishBatch(ctx, []transport.Outgoing{{Group: g, Event: transporttest.Event(g), Flow: fl}}); err != nil {
			t.Fatal(err)
		}
	}
	if l, err := tr.Claim(ctx, "w", time.Minute, 0); err != nil || l == nil || l.Event.ID != "G" {
		t.Fatalf("Claim = %+v, %v; want G, admitted with the bucket's token", l, err)
	}
	for {
		l, err := tr.Claim(ctx, "w", time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		if l != nil {
			if l.Event.ID != "H" {
				t.Fatalf("Claim = %s, want H", l.Event.ID)
			}
			break
		}
		if err := tr.Wait(ctx); err != nil {
			t.Fatalf("Wait = %v; want a wake-up when H's token is due", err)
		}
	}
	if took := time.Since(began); took < 200*time.Millisecond {
		t.Fatalf("H was claimed after %v, before its token was due", took)
	}
}

// TestFlowsSurviveReopen checks that a key's limits and counts, and what waits for it, are kept
// in the file: a transport opened on it after a close admits as the first did.
func TestFlowsSurviveReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "reopen.db")
	ctx := context.Background()
	tr := open(t, path)
	fl := transport.Flow{Key: "k", Concurrency: 1}
	for _, g := range []string{"G", "H"} {
		if err := tr.PublishBatch(ctx, []transport.Outgoing{{Group: g, Event: transporttest.Event(g), Flow: fl}}); err != nil {
			t.Fatal(err)
		}
	}
	g, err := tr.Claim(ctx, "w", time.Minute, 0)
	if err != nil || g == nil || g.Event.ID != "G" {
		t.Fatalf("Claim = %+v, %v; want G", g, err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	tr = open(t, path)
	defer tr.Close()
	st, err := tr.FlowState(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if st.Flow != fl || st.Admitted != 1 || st.Waiting != 1 {
		t.Fatalf("FlowState after reopen = %+v, want %+v with 1 admitted, 1 waiting", st, fl)
	}
	if l, err := tr.Claim(ctx, "w", time.Minute, 0); err != nil || l != nil {
		t.Fatalf("Claim = %+v, %v; want nothing while G holds k's place", l, err)
	}
	if err := tr.Ack(ctx, g); err != nil {
		t.Fatal(err)
	}
	if l, err := tr.Claim(ctx, "w", time.Minute, 0); err != nil || l == nil || l.Event.ID != "H" {
		t.Fatalf("Claim after G's ack = %+v, %v; want H", l, err)
	}
}

// TestRateTokenSeenByAnotherProcess checks that a rate token scheduled by one process's
// transaction is found by another process's claim, and that limits and counts are the file's:
// either process reads the same FlowState, and a Forget in one frees what the other waits for.
func TestRateTokenSeenByAnotherProcess(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rate.db")
	clock := transporttest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	a := open(t, path, sqlitetransport.WithClock(clock.Now))
	defer a.Close()
	b := open(t, path, sqlitetransport.WithClock(clock.Now))
	defer b.Close()
	ctx := context.Background()
	fl := transport.Flow{Key: "k", Rate: 1, Per: time.Second}
	for _, g := range []string{"G", "H", "J"} {
		if err := a.PublishBatch(ctx, []transport.Outgoing{{Group: g, Event: transporttest.Event(g), Flow: fl}}); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(tr *transport.Transport, want string) {
		t.Helper()
		l, err := tr.Claim(ctx, "w", time.Minute, 0)
		got := ""
		if l != nil {
			got = l.Event.ID
		}
		if err != nil || got != want {
			t.Fatalf("Claim = %q, %v; want %q", got, err, want)
		}
	}
	claim(b, "G") // the bucket's one token, taken by a's publish
	claim(b, "")
	clock.Advance(time.Second)
	claim(b, "H") // the token a's publish scheduled, found by b's claim
	for _, tr := range []*transport.Transport{a, b} {
		st, err := tr.FlowState(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if st.Flow != fl || st.Admitted != 2 || st.Waiting != 1 {
			t.Fatalf("FlowState = %+v; want %+v, 2 admitted, 1 waiting", st, fl)
		}
	}
	if err := b.Forget(ctx, []string{"J"}); err != nil {
		t.Fatal(err)
	}
	claim(a, "J") // unlimited now, with no token due
}

// TestTwoProcessesShareARate races claims of two processes each time a rate token comes due:
// exactly one group is admitted per token, whichever process's claim admits it.
func TestTwoProcessesShareARate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rate.db")
	clock := transporttest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	a := open(t, path, sqlitetransport.WithClock(clock.Now))
	defer a.Close()
	b := open(t, path, sqlitetransport.WithClock(clock.Now))
	defer b.Close()
	ctx := context.Background()
	const rounds = 5
	var msgs []transport.Outgoing
	for i := range rounds + 1 {
		g := fmt.Sprintf("g%d", i)
		msgs = append(msgs, transport.Outgoing{Group: g, Event: transporttest.Event(g),
			Flow: transport.Flow{Key: "k", Rate: 1, Per: time.Minute}})
	}
	if err := a.PublishBatch(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	for round := range rounds + 1 {
		if round > 0 {
			clock.Advance(time.Minute)
		}
		var wg sync.WaitGroup
		got := make([][]transport.Lease, 4)
		errs := make([]error, 4)
		for i, tr := range []*transport.Transport{a, b, a, b} {
			wg.Go(func() { got[i], errs[i] = tr.ClaimBatch(ctx, fmt.Sprintf("w%d", i), time.Hour, 0, 4) })
		}
		wg.Wait()
		var ids []string
		for i := range got {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			for _, l := range got[i] {
				ids = append(ids, l.Event.ID)
			}
		}
		if want := fmt.Sprintf("g%d", round); len(ids) != 1 || ids[0] != want {
			t.Fatalf("round %d: claimed %v, want [%s]: one group per token, oldest first", round, ids, want)
		}
	}
}
