package sqlitetransport_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("not a database "), 512), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		opts []sqlitetransport.Option
		want error
	}{
		{"empty path", "", nil, stead.ErrInvalid},
		{"NUL in path", filepath.Join(dir, "a\x00.db"), nil, stead.ErrInvalid},
		{"path not UTF-8", filepath.Join(dir, "a\xff.db"), nil, stead.ErrInvalid},
		{"negative busy timeout", filepath.Join(dir, "b.db"), []sqlitetransport.Option{sqlitetransport.WithBusyTimeout(-time.Second)}, stead.ErrInvalid},
		{"unknown synchronous", filepath.Join(dir, "c.db"), []sqlitetransport.Option{sqlitetransport.WithSynchronous("OFF")}, stead.ErrInvalid},
		{"empty synchronous", filepath.Join(dir, "c.db"), []sqlitetransport.Option{sqlitetransport.WithSynchronous("")}, stead.ErrInvalid},
		{"zero poll", filepath.Join(dir, "d.db"), []sqlitetransport.Option{sqlitetransport.WithPollInterval(0)}, stead.ErrInvalid},
		{"missing directory", filepath.Join(dir, "no", "such", "dir", "e.db"), nil, stead.ErrUnavailable},
		{"not a database", garbage, nil, stead.ErrUnavailable},
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

// TestOpenPathWithURICharacters opens a transport on a file whose name holds characters a "file:"
// URI reserves ('?' starts a query, '#' a fragment) or that need care in one (space, '%'), in a
// directory with spaces, and checks that it works, persists across a reopen, and lives in the
// file named rather than in one cut at the '?' or '#'.
func TestOpenPathWithURICharacters(t *testing.T) {
	t.Parallel()
	tests := []struct{ dir, file string }{
		{"plain", "q?mode=ro#x y.db"},
		{"dir with spaces", "a b?c#d.db"},
		{"dir with  two  spaces", "100% sure?.db"},
	}
	for _, tc := range tests {
		t.Run(tc.dir+"/"+tc.file, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), tc.dir)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, tc.file)
			ctx := context.Background()
			tr := open(t, path)
			if err := tr.Publish(ctx, "G", transporttest.Event("e1"), 0); err != nil {
				t.Fatalf("Publish: %v", err)
			}
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
			tr = open(t, path)
			defer tr.Close()
			l, err := tr.Claim(ctx, "w", time.Minute, 0)
			if err != nil || l == nil || l.Event.ID != "e1" {
				t.Fatalf("Claim after reopen = %+v, %v; want e1", l, err)
			}
			if err := tr.Ack(ctx, l); err != nil {
				t.Fatalf("Ack: %v", err)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if !strings.HasPrefix(e.Name(), tc.file) { // the file and its -wal and -shm
					t.Errorf("%q created beside %q", e.Name(), tc.file)
				}
			}
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("the file named was not created: %v", err)
			}
		})
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
// and checks that an operation retries within the busy timeout, then fails with ErrUnavailable
// having written nothing, with the SQLite error kept in the chain. A zero busy timeout fails at
// once.
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
		{"no wait", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "busy.db")
			tr := open(t, path, sqlitetransport.WithBusyTimeout(tc.busy))
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
	for w, tr := range []*sqlitetransport.Transport{a, b, a, b} {
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
