package sqlitetransport_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/sqlitetransport"
	"github.com/steadhq/stead/transport/transporttest"
	"modernc.org/sqlite"
)

func open(t testing.TB, path string, opts ...sqlitetransport.Option) *sqlitetransport.Transport {
	t.Helper()
	tr, err := sqlitetransport.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return tr
}

func TestConformance(t *testing.T) {
	t.Parallel()
	transporttest.Run(t, func(t *testing.T, clock func() time.Time) transport.Transport {
		return open(t, filepath.Join(t.TempDir(), "transport.db"), sqlitetransport.WithClock(clock))
	})
}

func TestConformanceInMemory(t *testing.T) {
	t.Parallel()
	transporttest.Run(t, func(t *testing.T, clock func() time.Time) transport.Transport {
		return open(t, ":memory:", sqlitetransport.WithClock(clock))
	})
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
		opts []sqlitetransport.Option
		want error
	}{
		{"empty path", "", nil, stead.ErrInvalid},
		{"query in path", filepath.Join(dir, "a.db?mode=ro"), nil, stead.ErrInvalid},
		{"negative busy timeout", filepath.Join(dir, "b.db"), []sqlitetransport.Option{sqlitetransport.WithBusyTimeout(-time.Second)}, stead.ErrInvalid},
		{"unknown synchronous", filepath.Join(dir, "c.db"), []sqlitetransport.Option{sqlitetransport.WithSynchronous("OFF")}, stead.ErrInvalid},
		{"zero poll", filepath.Join(dir, "d.db"), []sqlitetransport.Option{sqlitetransport.WithPollInterval(0)}, stead.ErrInvalid},
		{"missing directory", filepath.Join(dir, "no", "such", "dir", "e.db"), nil, stead.ErrUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr, err := sqlitetransport.Open(context.Background(), tc.path, tc.opts...)
			if err == nil {
				tr.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestBusyIsUnavailable holds the write lock from another connection, as another process would,
// and checks that an operation waits for the busy timeout, then fails with ErrUnavailable having
// written nothing.
func TestBusyIsUnavailable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "busy.db")
	tr := open(t, path, sqlitetransport.WithBusyTimeout(100*time.Millisecond))
	defer tr.Close()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	err = tr.Publish(ctx, "G", transporttest.Event("e1"), 0)
	if !errors.Is(err, stead.ErrUnavailable) {
		t.Fatalf("Publish while locked = %v, want ErrUnavailable", err)
	}
	if waited := time.Since(began); waited < 100*time.Millisecond {
		t.Fatalf("gave up after %v, before the busy timeout", waited)
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
}

// TestTwoProcessesNeverShareAMessage runs claimers on two transports (two connections, as two
// processes would) on one file.
func TestTwoProcessesNeverShareAMessage(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.db")
	a, b := open(t, path), open(t, path)
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	const groups, perGroup = 10, 10
	var msgs []transport.Outgoing
	for i := range perGroup {
		for g := range groups {
			msgs = append(msgs, transport.Outgoing{Group: fmt.Sprintf("g%d", g), Event: transporttest.Event(fmt.Sprintf("g%d-%02d", g, i))})
		}
	}
	if err := a.PublishBatch(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		inFlight = map[string]bool{}
		got      = map[string][]string{}
		total    int
		wg       sync.WaitGroup
	)
	errc := make(chan error, 4)
	for w, tr := range []*sqlitetransport.Transport{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				finished := total >= groups*perGroup
				mu.Unlock()
				if finished {
					return
				}
				ls, err := tr.ClaimBatch(ctx, fmt.Sprintf("w%d", w), time.Hour, 0, 2)
				if err != nil {
					errc <- err
					return
				}
				mu.Lock()
				for _, l := range ls {
					if inFlight[l.Group] {
						mu.Unlock()
						errc <- fmt.Errorf("%s claimed while %s is in flight", l.Event.ID, l.Group)
						return
					}
					inFlight[l.Group] = true
					got[l.Group] = append(got[l.Group], l.Event.ID)
				}
				for _, l := range ls {
					delete(inFlight, l.Group)
				}
				mu.Unlock()
				if err := tr.AckBatch(ctx, ls); err != nil {
					errc <- err
					return
				}
				mu.Lock()
				total += len(ls)
				mu.Unlock()
				if len(ls) == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	for g := range groups {
		grp := fmt.Sprintf("g%d", g)
		var want []string
		for i := range perGroup {
			want = append(want, fmt.Sprintf("%s-%02d", grp, i))
		}
		if !slices.Equal(got[grp], want) {
			t.Errorf("group %s delivered %v, want %v", grp, got[grp], want)
		}
	}
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
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = tr.Publish(ctx, "G", transporttest.Event("e1"), 0)
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
