package pgdb_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead/internal/errs"
	"github.com/steadhq/stead/internal/faultproxy"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
)

// server returns the test server's "host:port" after checking it answers (pgdbtest skips or,
// with STEAD_REQUIRE_POSTGRES=1, fails when it does not).
func server(t *testing.T) string {
	t.Helper()
	pgdbtest.Pool(t)
	cfg, err := pgx.ParseConfig(pgdbtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Host + ":" + itoa(int(cfg.Port))
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for n >= 10 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	i--
	b[i] = byte('0' + n)
	return string(b[i:])
}

// withHosts returns the test URL with its host list replaced by hosts and the extra query
// parameters added.
func withHosts(t *testing.T, hosts []string, params ...string) string {
	t.Helper()
	u, err := url.Parse(pgdbtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.Host = strings.Join(hosts, ",")
	q := u.Query()
	for i := 0; i+1 < len(params); i += 2 {
		q.Set(params[i], params[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func proxy(t *testing.T, target string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	p := proxy(t, "127.0.0.1:1")
	addr := p.Addr()
	p.Close()
	return addr
}

func unavailableOrTimeout(err error) bool {
	err = pgdb.Classify(err)
	return errors.Is(err, errs.Unavailable) || errors.Is(err, errs.Timeout)
}

// TestSilentServerCallsEnd: every kind of call on a pool whose server goes silent without
// closing anything (a proxy that stops forwarding) ends within the call timeout with
// ErrUnavailable or ErrTimeout, instead of waiting for TCP, and the pool works again once the
// server answers.
func TestSilentServerCallsEnd(t *testing.T) {
	t.Parallel()
	p := proxy(t, server(t))
	const callTimeout = 400 * time.Millisecond
	pool, err := pgdb.Open(context.Background(), withHosts(t, []string{p.Addr()}),
		pgdb.Config{MaxConns: 2, CallTimeout: callTimeout, ConnectTimeout: 300 * time.Millisecond,
			PingTimeout: 300 * time.Millisecond, ConnectAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	calls := []struct {
		name string
		call func(ctx context.Context, pool *pgxpool.Pool) error
	}{
		{"exec", func(ctx context.Context, pool *pgxpool.Pool) error { _, err := pool.Exec(ctx, "SELECT 1"); return err }},
		{"query row", func(ctx context.Context, pool *pgxpool.Pool) error {
			var n int
			return pool.QueryRow(ctx, "SELECT 1").Scan(&n)
		}},
		{"batch", func(ctx context.Context, pool *pgxpool.Pool) error {
			b := &pgx.Batch{}
			b.Queue("SELECT 1")
			b.Queue("SELECT 2")
			return pool.SendBatch(ctx, b).Close()
		}},
		{"transaction", func(ctx context.Context, pool *pgxpool.Pool) error {
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { _, err := tx.Exec(ctx, "SELECT 1"); return err })
		}},
	}
	for _, c := range calls {
		if err := c.call(context.Background(), pool); err != nil {
			t.Fatalf("%s before the black hole: %v", c.name, err)
		}
	}
	p.BlackHole()
	for _, c := range calls {
		start := time.Now()
		err := c.call(context.Background(), pool)
		took := time.Since(start)
		if !unavailableOrTimeout(err) {
			t.Errorf("%s in the black hole: %v, want ErrUnavailable or ErrTimeout", c.name, err)
		}
		// One call may acquire (a ping, a connect: bounded) and then run (bounded): twice the
		// timeout, and slack for a loaded machine.
		if took > 2*callTimeout+2*time.Second {
			t.Errorf("%s in the black hole took %v, want about %v", c.name, took, callTimeout)
		}
	}
	p.Heal()
	p.Cut() // the connections that sat in the black hole carry stale bytes: start afresh
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := pool.Exec(context.Background(), "SELECT 1")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool did not recover after the heal: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOpenSilentServer: Open against a server that never answers gives up after its attempts,
// each bounded by the connect timeout, with ErrUnavailable.
func TestOpenSilentServer(t *testing.T) {
	t.Parallel()
	p := proxy(t, server(t))
	p.BlackHole()
	start := time.Now()
	_, err := pgdb.Open(context.Background(), withHosts(t, []string{p.Addr()}),
		pgdb.Config{ConnectTimeout: 300 * time.Millisecond, ConnectAttempts: 2, ConnectDelay: 10 * time.Millisecond})
	if !errors.Is(err, errs.Unavailable) {
		t.Fatalf("Open = %v, want ErrUnavailable", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Open took %v against a silent server, want about 2 × 300ms", took)
	}
}

// TestMultiHost: a URL with a refusing host and a silent one before the server connects to the
// server, and once it has, new connections go there first instead of waiting on the silent
// host again.
func TestMultiHost(t *testing.T) {
	t.Parallel()
	silent := proxy(t, server(t))
	silent.BlackHole()
	const connect = 2 * time.Second
	pool, err := pgdb.Open(context.Background(), withHosts(t, []string{deadAddr(t), silent.Addr(), server(t)}),
		pgdb.Config{MaxConns: 4, ConnectTimeout: connect, ConnectAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for i := range 3 {
		pool.Reset() // every call below needs a new connection
		start := time.Now()
		if _, err := pool.Exec(context.Background(), "CREATE TEMP TABLE t(x int)"); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if took := time.Since(start); took >= connect {
			t.Fatalf("round %d: a new connection took %v: it waited on the silent host again", i, took)
		}
	}
}

// TestReadOnlyServer: a server that refuses writes (a standby, a demoted primary) is refused at
// connect by a multi-host URL (target_session_attrs=read-write by default), and when a
// single-host pool lands on one, the refused write is ErrUnavailable and the connection is
// dropped, so that the next one can find the new primary.
func TestReadOnlyServer(t *testing.T) {
	t.Parallel()
	addr := server(t)
	readOnly := []string{"default_transaction_read_only", "on"}
	two := []string{proxy(t, addr).Addr(), proxy(t, addr).Addr()} // two hosts, both read-only
	_, err := pgdb.Open(context.Background(), withHosts(t, two, readOnly...), pgdb.Config{ConnectAttempts: 1})
	if !errors.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "read only") {
		t.Fatalf("Open on read-only hosts = %v, want ErrUnavailable saying read only", err)
	}

	pool, err := pgdb.Open(context.Background(), withHosts(t, []string{addr}, readOnly...), pgdb.Config{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, err = pool.Exec(context.Background(), "CREATE TABLE stead_never_created(x int)")
	if got := pgdb.Classify(err); !errors.Is(got, errs.Unavailable) {
		t.Fatalf("a write on a read-only server: %v, want ErrUnavailable", got)
	}
	deadline := time.Now().Add(2 * time.Second)
	for pool.Stat().TotalConns() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the read-only connection was kept (%d open)", pool.Stat().TotalConns())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCallTimeout: a call longer than the call timeout ends with ErrTimeout, unless its context
// has a deadline of its own or is exempted.
func TestCallTimeout(t *testing.T) {
	t.Parallel()
	pool, err := pgdb.Open(context.Background(), withHosts(t, []string{server(t)}), pgdb.Config{CallTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	long, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tests := []struct {
		name string
		ctx  context.Context
		ok   bool
	}{
		{"no deadline", context.Background(), false},
		{"own deadline", long, true},
		{"exempted", pgdb.WithoutCallTimeout(context.Background()), true},
	}
	for _, tt := range tests {
		_, err := pool.Exec(tt.ctx, "SELECT pg_sleep(0.5)")
		if tt.ok && err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		if !tt.ok && !errors.Is(pgdb.Classify(err), errs.Timeout) {
			t.Errorf("%s: %v, want ErrTimeout", tt.name, err)
		}
	}
}

// TestSilentHostDropsIdle: once one call finds its server silent, the pool's idle connections
// to it are closed at once, so that the calls after it do not each wait out a liveness ping on
// a dead connection.
func TestSilentHostDropsIdle(t *testing.T) {
	t.Parallel()
	p := proxy(t, server(t))
	pool, err := pgdb.Open(context.Background(), withHosts(t, []string{p.Addr()}),
		pgdb.Config{MaxConns: 4, CallTimeout: 300 * time.Millisecond, ConnectAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	warm := make([]*pgxpool.Conn, 4)
	for i := range warm {
		if warm[i], err = pool.Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range warm {
		c.Release()
	}
	p.BlackHole()
	if _, err := pool.Exec(context.Background(), "SELECT 1"); !unavailableOrTimeout(err) {
		t.Fatalf("a call on a silent server: %v", err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for pool.Stat().TotalConns() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections to the silent server kept", pool.Stat().TotalConns())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSilentHostConnectBudget: with several hosts, a connect to a host that went silent is given
// about a second instead of the connect timeout, and once the host answers again its
// connections work past that second.
func TestSilentHostConnectBudget(t *testing.T) {
	t.Parallel()
	p := proxy(t, server(t))
	dead := deadAddr(t) // a second host, refusing: the silent one is not the only place to go
	pool, err := pgdb.Open(context.Background(), withHosts(t, []string{p.Addr(), dead}),
		pgdb.Config{MaxConns: 2, CallTimeout: 300 * time.Millisecond, ConnectTimeout: 5 * time.Second, ConnectAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	p.BlackHole()
	if _, err := pool.Exec(context.Background(), "SELECT 1"); !unavailableOrTimeout(err) {
		t.Fatalf("a call on a silent server: %v", err)
	}
	pool.Reset()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := pool.Exec(ctx, "SELECT 1"); !unavailableOrTimeout(err) {
		t.Fatalf("a connect to a silent server: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("a connect to a host known silent took %v, want about a second, not the 5s connect timeout", took)
	}
	p.Heal()
	p.Cut()
	if _, err := pool.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatalf("after the heal: %v", err)
	}
	if _, err := pool.Exec(ctx, "SELECT pg_sleep(1.2)"); err != nil {
		t.Fatalf("a connection made under the silent budget still has it: %v", err)
	}
}

// TestOneHostNoReadWriteCheck: the read-write check is for several hosts; one host, even with
// sslmode=prefer (which pgx keeps as a second, plain fallback of the same host), connects to a
// read-only server and is refused at its first write.
func TestOneHostNoReadWriteCheck(t *testing.T) {
	t.Parallel()
	pool, err := pgdb.Open(context.Background(), withHosts(t, []string{server(t)},
		"sslmode", "prefer", "default_transaction_read_only", "on"), pgdb.Config{ConnectAttempts: 1})
	if err != nil {
		t.Fatalf("one read-only host: %v, want a connection", err)
	}
	pool.Close()
}
