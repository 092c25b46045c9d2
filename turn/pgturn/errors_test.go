package pgturn_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/pgturn"
)

// Waiting longer than the acquire timeout for a connection sends nothing and is ErrUnavailable.
func TestAcquireTimeoutIsUnavailable(t *testing.T) {
	t.Parallel()
	pgdbtest.Pool(t) // skips when the server is unreachable
	pool := openPool(t, pgdbtest.URL(), pgdb.Config{MaxConns: 1})
	s := newStoreOn(t, pool, pgdbtest.Schema(t), pgturn.WithAcquireTimeout(100*time.Millisecond))
	held, err := pool.Acquire(t.Context())
	must(t, err, "hold the only connection")
	_, err = s.Conversations.LoadConversation(t.Context(), "acct", turn.NewID())
	held.Release()
	if !errors.Is(err, turn.ErrUnavailable) {
		t.Fatalf("load with the pool exhausted: %v, want ErrUnavailable", err)
	}
}

// statement_timeout firing (here on a lock wait) is ErrTimeout, and the write did not land.
func TestStatementTimeoutIsTimeout(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.Schema(t)
	s := newStoreOn(t, openPool(t, pgdbtest.URL(), pgdb.Config{StatementTimeout: 200 * time.Millisecond}), schema)
	ctx := t.Context()
	e := outboxEntry(turn.NewID(), "mailer", "k", at(0))
	must(t, s.Outbox.Enqueue(ctx, e), "enqueue")
	_, err := s.Outbox.ClaimDue(ctx, at(1), 1, "w")
	must(t, err, "claim")

	locker := pgdbtest.Pool(t)
	tx, err := locker.Begin(ctx)
	must(t, err, "begin")
	_, err = tx.Exec(ctx, `SELECT 1 FROM `+schema+`.turn_outbox WHERE outbox_id = $1 FOR UPDATE`, e.OutboxID)
	must(t, err, "lock the row")
	err = s.Outbox.MarkCompleted(ctx, e.OutboxID)
	must(t, tx.Rollback(ctx), "release the lock")
	if !errors.Is(err, turn.ErrTimeout) {
		t.Fatalf("write blocked past statement_timeout: %v, want ErrTimeout", err)
	}
	rec, err := s.Outbox.LoadOutbox(ctx, e.OutboxID)
	must(t, err, "load")
	if rec.Entry.Status != turn.OutboxDispatching {
		t.Fatalf("status %q after the cancelled write, want dispatching", rec.Entry.Status)
	}
}

// openPool opens a pool with the given settings, closed when t ends.
func openPool(t testing.TB, url string, c pgdb.Config) *pgxpool.Pool {
	t.Helper()
	pool, err := pgdb.Open(t.Context(), url, c)
	must(t, err, "open a pool")
	t.Cleanup(pool.Close)
	return pool
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	pool := pgdbtest.Pool(t)
	tests := []struct {
		name string
		pool *pgxpool.Pool
		opts []pgturn.Option
		want error
	}{
		{"nil pool", nil, nil, turn.ErrInvalid},
		{"unsafe schema", pool, []pgturn.Option{pgturn.WithSchema("a;b")}, turn.ErrInvalid},
		{"system schema", pool, []pgturn.Option{pgturn.WithSchema("pg_catalog")}, turn.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := pgturn.New(t.Context(), tt.pool, tt.opts...); !errors.Is(err, tt.want) {
				t.Fatalf("New: %v, want %v", err, tt.want)
			}
		})
	}
	// Nothing listening: the pool opens lazily, and the migration finds no server.
	dead, err := pgxpool.New(t.Context(), "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=1")
	must(t, err, "a pool on nothing")
	defer dead.Close()
	if _, err := pgturn.New(t.Context(), dead); !errors.Is(err, turn.ErrUnavailable) {
		t.Fatalf("New on a pool with no server: %v, want ErrUnavailable", err)
	}
	// Without the migration, New only checks the schema's version: an empty schema is refused.
	if _, err := pgturn.New(t.Context(), pool, pgturn.WithSchema(pgdbtest.Schema(t)), pgturn.WithoutMigrate()); err == nil {
		t.Fatal("New without migrating accepted a schema that was never migrated")
	}
}

// Close refuses every later call with ErrClosed and leaves the application's pool open.
func TestClosedStore(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	must(t, s.Close(), "close")
	must(t, s.Close(), "close again") // idempotent
	if _, err := s.Conversations.LoadConversation(t.Context(), "acct", turn.NewID()); !errors.Is(err, stead.ErrClosed) {
		t.Fatalf("read after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Commits.Commit(t.Context(), "acct", turn.Bundle{}); !errors.Is(err, stead.ErrClosed) {
		t.Fatalf("commit after Close: %v, want ErrClosed", err)
	}
	if err := s.pool.Ping(t.Context()); err != nil {
		t.Fatalf("the application's pool after Close: %v", err)
	}
}

// cutProxy forwards connections to PostgreSQL until a client message matches cut; then it
// forwards that message too if forward is set, and drops the connection at once.
type cutProxy struct {
	ln      net.Listener
	cut     func([]byte) bool
	forward bool
	armed   atomic.Bool
	wg      sync.WaitGroup
}

func newCutProxy(t *testing.T, cut func([]byte) bool, forward bool) (*cutProxy, string) {
	t.Helper()
	target, err := url.Parse(pgdbtest.URL())
	must(t, err, "parse test URL")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err, "listen")
	p := &cutProxy{ln: ln, cut: cut, forward: forward}
	p.wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target.Host)
			if err != nil {
				client.Close()
				continue
			}
			p.wg.Go(func() { p.pipe(client, server) })
		}
	})
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	u := *target
	u.Host = ln.Addr().String()
	return p, u.String()
}

func (p *cutProxy) pipe(client, server net.Conn) {
	defer client.Close()
	defer server.Close()
	p.wg.Go(func() { _, _ = io.Copy(client, server); client.Close() })
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if p.armed.Load() && p.cut(chunk) && p.armed.CompareAndSwap(true, false) {
				if p.forward {
					_, _ = server.Write(chunk)
				}
				return
			}
			if _, err := server.Write(chunk); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// The simple-protocol COMMIT pgx sends: 'Q', length 11, "commit\0".
var commitMessage = []byte("Q\x00\x00\x00\x0bcommit\x00")

// A COMMIT that reaches the server but whose answer never comes back is indeterminate: ErrTimeout.
// Here it did land, which is exactly why the caller must re-read rather than retry.
func TestLostCommitIsTimeout(t *testing.T) {
	t.Parallel()
	s, proxy, schema := cutStore(t, func(b []byte) bool { return bytes.Contains(b, commitMessage) }, true)
	ctx := t.Context()
	c := turn.Conversation{ID: turn.NewID(), AccountID: "acct", CreatedAt: at(0)}
	proxy.armed.Store(true)
	if err := s.Conversations.CreateConversation(ctx, c); !errors.Is(err, turn.ErrTimeout) {
		t.Fatalf("write whose COMMIT got no answer: %v, want ErrTimeout", err)
	}
	direct := newStoreOn(t, pgdbtest.Pool(t), schema, pgturn.WithoutMigrate())
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := direct.Conversations.LoadConversation(ctx, "acct", c.ID)
		if err == nil {
			break
		}
		if !errors.Is(err, turn.ErrNotFound) || time.Now().After(deadline) {
			t.Fatalf("the committed conversation: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A connection lost before COMMIT was sent rolls the transaction back: ErrUnavailable, nothing
// written, safe to retry.
func TestConnectionLostBeforeCommitIsUnavailable(t *testing.T) {
	t.Parallel()
	s, proxy, schema := cutStore(t, func(b []byte) bool { return bytes.Contains(b, []byte("INSERT INTO")) }, false)
	ctx := t.Context()
	c := turn.Conversation{ID: turn.NewID(), AccountID: "acct", CreatedAt: at(0)}
	proxy.armed.Store(true)
	if err := s.Conversations.CreateConversation(ctx, c); !errors.Is(err, turn.ErrUnavailable) {
		t.Fatalf("write whose connection dropped before COMMIT: %v, want ErrUnavailable", err)
	}
	if _, err := newStoreOn(t, pgdbtest.Pool(t), schema, pgturn.WithoutMigrate()).Conversations.LoadConversation(ctx, "acct", c.ID); !errors.Is(err, turn.ErrNotFound) {
		t.Fatalf("conversation after the lost write: %v, want ErrNotFound", err)
	}
	must(t, s.Conversations.CreateConversation(ctx, c), "retry")
}

// cutStore returns a store, migrated on a fresh schema, that reaches PostgreSQL only through a
// cutProxy (not yet armed); it returns the proxy and the schema with it.
func cutStore(t *testing.T, cut func([]byte) bool, forward bool) (store, *cutProxy, string) {
	t.Helper()
	schema := pgdbtest.Schema(t)
	proxy, proxied := newCutProxy(t, cut, forward)
	s := newStoreOn(t, openPool(t, proxied, pgdb.Config{ConnectAttempts: 1}), schema)
	return s, proxy, schema
}
