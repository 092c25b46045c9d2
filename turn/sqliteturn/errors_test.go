package sqliteturn_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/sqliteturn"
)

// holdWriteLock takes the file's write lock from another connection, as another process would,
// until t ends or the returned release is called.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	conn, err := rawFile(t, path).Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
			conn.Close()
		}
	}
	t.Cleanup(release)
	return release
}

// A write that cannot have the file writes nothing and says so: ErrUnavailable, never
// ErrTimeout, whether the busy timeout ran out or the caller's context ended while it waited.
func TestWriteThatCannotHaveTheFileIsUnavailable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		ctx     func(t *testing.T) context.Context
		wantCtx error // in the chain besides ErrUnavailable
	}{
		{"busy past the busy timeout", func(t *testing.T) context.Context { return t.Context() }, nil},
		{"deadline while waiting", func(t *testing.T) context.Context {
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			t.Cleanup(cancel)
			return ctx
		}, context.DeadlineExceeded},
		{"cancelled while waiting", func(t *testing.T) context.Context {
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(50*time.Millisecond, cancel)
			return ctx
		}, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "turns.db")
			db, err := sqlitedb.Open(t.Context(), sqlitedb.Config{Path: path, BusyTimeout: 200 * time.Millisecond})
			must(t, err, "open")
			t.Cleanup(func() { db.Close() })
			s := storeOn(t, db)
			if tt.wantCtx != nil { // the busy timeout must not be what ends the wait
				db.BusyTimeout = 10 * time.Second
			}
			release := holdWriteLock(t, path)
			conv := turn.Conversation{ID: turn.NewID(), AccountID: "acct", CreatedAt: at(0)}
			err = s.Conversations.CreateConversation(tt.ctx(t), conv)
			if !errors.Is(err, turn.ErrUnavailable) || errors.Is(err, turn.ErrTimeout) {
				t.Fatalf("write against a locked file: %v, want ErrUnavailable and not ErrTimeout", err)
			}
			if tt.wantCtx != nil && !errors.Is(err, tt.wantCtx) {
				t.Fatalf("write against a locked file: %v, want %v in the chain", err, tt.wantCtx)
			}
			release()
			if _, err := s.Conversations.LoadConversation(t.Context(), "acct", conv.ID); !errors.Is(err, turn.ErrNotFound) {
				t.Fatalf("the refused write left something: %v", err)
			}
			must(t, s.Conversations.CreateConversation(t.Context(), conv), "the same write once the file is free")
		})
	}
}

// New refuses what it cannot work with: no database, and a file whose schema is newer than this
// build.
func TestNewRefuses(t *testing.T) {
	t.Parallel()
	if _, err := sqliteturn.New(t.Context(), nil); !errors.Is(err, turn.ErrInvalid) {
		t.Fatalf("New(nil): %v, want ErrInvalid", err)
	}
	_, path := newStore(t)
	_, err := rawFile(t, path).ExecContext(t.Context(), "INSERT INTO turn_migrations (version, name) VALUES (999, 'future')")
	must(t, err, "record a future version")
	if _, err := sqliteturn.New(t.Context(), openDB(t, path)); err == nil {
		t.Fatal("New on a file with a newer schema succeeded")
	}
}

// New is safe on every start-up: migrating a migrated file changes nothing, and the data stays.
func TestNewMigratesOnce(t *testing.T) {
	t.Parallel()
	s, path := newStore(t)
	conv := turn.Conversation{ID: turn.NewID(), AccountID: "acct", CreatedAt: at(0)}
	must(t, s.Conversations.CreateConversation(t.Context(), conv), "create")
	versions := func() (n int) {
		must(t, rawFile(t, path).QueryRowContext(t.Context(), "SELECT count(*) FROM turn_migrations").Scan(&n), "versions")
		return n
	}
	before := versions()
	again := storeOn(t, openDB(t, path))
	if _, err := again.Conversations.LoadConversation(t.Context(), "acct", conv.ID); err != nil {
		t.Fatalf("after a second New: %v", err)
	}
	if after := versions(); before != 1 || after != before {
		t.Fatalf("versions recorded: %d after the first New (want 1), %d after the second", before, after)
	}
}

// The closed Stores refuse every call with ErrClosed, and the application's database stays open.
func TestCloseLeavesTheDatabaseOpen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "turns.db")
	db := openDB(t, path)
	s := storeOn(t, db)
	must(t, s.Close(), "close")
	if err := s.Conversations.CreateConversation(t.Context(), turn.Conversation{ID: turn.NewID(), AccountID: "acct", CreatedAt: at(0)}); !errors.Is(err, turn.ErrClosed) {
		t.Fatalf("write after Close: %v, want ErrClosed", err)
	}
	if err := db.R.PingContext(t.Context()); err != nil {
		t.Fatalf("the database was closed with the store: %v", err)
	}
}
