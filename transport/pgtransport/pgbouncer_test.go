package pgtransport_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/transport/pgtransport"
)

// TestListenURLThroughPgBouncer checks that a transport whose pool goes through a real PgBouncer
// in transaction mode, with its listener on a direct connection (WithListenURL), is woken by a
// publish from another process within moments, not at the next poll.
func TestListenURLThroughPgBouncer(t *testing.T) {
	t.Parallel()
	url := pgdbtest.BouncerURL(t)
	schema := pgdbtest.Schema(t)
	pool, err := pgdb.Open(context.Background(), url, pgdb.Config{MaxConns: 4, PgBouncer: true, ConnectAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	waiter := openOn(t, pool, schema, pgtransport.WithListenURL(pgdbtest.URL()), pgtransport.WithPollInterval(time.Hour))
	defer waiter.Close()
	publisher := open(t, schema) // another pool: another process
	defer publisher.Close()
	ctx := context.Background()
	// The first Wait starts the listener and returns once it listens (or at the first wake-up).
	first, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_ = waiter.Wait(first)
	cancel()
	woke := make(chan error, 1)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	go func() { woke <- waiter.Wait(wctx) }()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	if err := publisher.Publish(ctx, "G", event("e1"), 0); err != nil {
		t.Fatal(err)
	}
	if err := <-woke; err != nil {
		t.Fatalf("Wait: %v (no notification reached the listener)", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("woken %v after the publish", took)
	}
	l, err := waiter.Claim(ctx, "w", time.Minute, 0)
	if err != nil || l == nil {
		t.Fatalf("claim through PgBouncer: %v %v", l, err)
	}
}

// TestPgBouncerModeWithoutListenURLWarns checks that a transport on a pool in PgBouncer mode
// without a listen URL says that Wait will only poll, instead of listening through PgBouncer
// silently in vain; and that a listen URL that does not parse is refused.
func TestPgBouncerModeWithoutListenURLWarns(t *testing.T) {
	t.Parallel()
	pool := newPool(t, pgdb.Config{MaxConns: 2, PgBouncer: true})
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	tr := openOn(t, pool, pgdbtest.Schema(t), pgtransport.WithLogger(log))
	defer tr.Close()
	if out := buf.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "WithListenURL") {
		t.Errorf("log %q: want a warning naming WithListenURL", out)
	}
	_, err := pgtransport.New(context.Background(), pool, pgtransport.WithListenURL("postgres://%zz"))
	if !errors.Is(err, stead.ErrInvalid) {
		t.Errorf("unparsable listen URL: %v, want ErrInvalid", err)
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
