package pgtransport

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/faultproxy"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/transport/transporttest"
)

// syncBuffer is a log sink the listener goroutine and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitLog waits until the log holds want, counting from the log's length at from.
func waitLog(t *testing.T, log *syncBuffer, from int, want string, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := log.String()
		if i := strings.Index(s[from:], want); i >= 0 {
			return from + i + len(want)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the listener did not log %q within %v; log:\n%s", want, within, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestListenerLeavesSilentServer: a listener whose server goes silent without closing its
// connection (a proxy that stops forwarding) notices within its liveness check, reconnects once
// the server answers again, and notifications wake waiters again.
func TestListenerLeavesSilentServer(t *testing.T) {
	t.Parallel()
	pgdbtest.Pool(t)
	cfg, err := pgx.ParseConfig(pgdbtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.New(cfg.Host + ":" + itoa(int(cfg.Port)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	u, err := url.Parse(pgdbtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.Addr()
	q := u.Query()
	q.Set("connect_timeout", "1")
	u.RawQuery = q.Encode()
	log := &syncBuffer{}
	tr, b := openInternal(t, pgdbtest.Schema(t), WithPollInterval(time.Hour), WithListenURL(u.String()),
		WithLogger(slog.New(slog.NewTextHandler(log, nil))))
	defer tr.Close()
	b.cfg.listenCheck, b.cfg.listenPing = 200*time.Millisecond, 300*time.Millisecond
	short, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	_ = tr.Wait(short) // starts the listener
	cancel()
	<-b.listenReady

	p.BlackHole()
	start := time.Now()
	at := waitLog(t, log, 0, "listener lost its connection", 3*time.Second)
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the listener took %v to leave a silent server, want about 500ms", took)
	}
	// While the server stays silent, connecting again fails within the connect timeout.
	at = waitLog(t, log, at, "listener cannot connect", 5*time.Second)
	p.Heal()
	waitLog(t, log, at, "listener connected again", 10*time.Second)

	woken := make(chan error, 1)
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() { woken <- tr.Wait(wctx) }()
	time.Sleep(50 * time.Millisecond)
	other, _ := openInternal(t, b.Schema())
	defer other.Close()
	if err := other.Publish(context.Background(), "G", transporttest.Event("e"), 0); err != nil {
		t.Fatal(err)
	}
	if err := <-woken; err != nil {
		t.Fatalf("Wait after the listener came back: %v", err)
	}
}

func itoa(n int) string {
	s := ""
	for {
		s = string(rune('0'+n%10)) + s
		n /= 10
		if n == 0 {
			return s
		}
	}
}

// TestCallsOnSilentServerEnd: the transport's calls on a pool whose server goes silent end
// within the pool's call timeout with ErrUnavailable or ErrTimeout, though their contexts have
// no deadline (a worker's claim loop passes its work context, which has none).
func TestCallsOnSilentServerEnd(t *testing.T) {
	t.Parallel()
	pgdbtest.Pool(t)
	cfg, err := pgx.ParseConfig(pgdbtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.New(cfg.Host + ":" + itoa(int(cfg.Port)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	u, err := url.Parse(pgdbtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.Addr()
	const callTimeout = 400 * time.Millisecond
	pool, err := pgdb.Open(context.Background(), u.String(), pgdb.Config{MaxConns: 2, ConnectAttempts: 1,
		CallTimeout: callTimeout, ConnectTimeout: 300 * time.Millisecond, PingTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tr, err := New(context.Background(), pool, WithSchema(pgdbtest.Schema(t)), WithoutListen())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx := context.Background()
	if err := tr.Publish(ctx, "G", transporttest.Event("e1"), 0); err != nil {
		t.Fatal(err)
	}
	p.BlackHole()
	calls := []struct {
		name string
		call func() error
	}{
		{"claim", func() error { _, err := tr.ClaimBatch(ctx, "w", time.Minute, 0, 8); return err }},
		{"publish", func() error { return tr.Publish(ctx, "G", transporttest.Event("e2"), 0) }},
	}
	for _, c := range calls {
		start := time.Now()
		err := c.call()
		if !errors.Is(err, stead.ErrUnavailable) && !errors.Is(err, stead.ErrTimeout) {
			t.Errorf("%s on a silent server: %v, want ErrUnavailable or ErrTimeout", c.name, err)
		}
		if took := time.Since(start); took > 2*callTimeout+2*time.Second {
			t.Errorf("%s on a silent server took %v, want about %v", c.name, took, callTimeout)
		}
	}
	// The server comes back: the connections that sat in the black hole end, and Close (which
	// waits for the release of the lost claim) returns at once.
	p.Heal()
	p.Cut()
	start := time.Now()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*callTimeout+2*time.Second {
		t.Errorf("Close took %v", took)
	}
}
