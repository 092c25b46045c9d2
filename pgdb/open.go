package pgdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/internal/errs"
)

// Config holds the pool settings every stead PostgreSQL package shares, defined once here. Zero
// values take the defaults documented on each field.
type Config struct {
	// MaxConns bounds the pool (default: pgxpool's, the larger of 4 and the number of CPUs).
	MaxConns int32
	// MinConns keeps that many connections open (default 0).
	MinConns int32
	// MinIdleConns keeps that many idle connections ready, opening more as they are taken (default 0).
	MinIdleConns int32
	// MaxConnLifetime and MaxConnIdleTime recycle connections (defaults: pgxpool's, 1 h and 30 min).
	MaxConnLifetime time.Duration
	MaxConnIdleTime time.Duration
	// StatementTimeout is set as the statement_timeout of every connection (default: none). It
	// travels as a startup parameter, which PgBouncer refuses: with PgBouncer set it is refused
	// (stead.ErrInvalid); set statement_timeout on the database role there instead.
	StatementTimeout time.Duration
	// ConnectAttempts is how many times the first connection is tried (default 15).
	ConnectAttempts int
	// ConnectDelay is the pause between attempts (default 1 s).
	ConnectDelay time.Duration
	// CallTimeout is the deadline every call on the pool gets when its context has none:
	// each query, batch, copy and prepare (default DefaultCallTimeout; negative: none). An
	// acquire is bounded by ConnectTimeout and PingTimeout instead. A call whose server goes
	// silent (a dead host, a partition, a proxy whose server is gone) fails after it with an
	// error wrapping stead.ErrTimeout (the outcome is unknown) or stead.ErrUnavailable (nothing
	// was sent), and the connection is dropped, instead of waiting for TCP to give up. A
	// context that has a deadline keeps it, longer or shorter; WithoutCallTimeout exempts a
	// call that may rightly run longer.
	CallTimeout time.Duration
	// ConnectTimeout bounds each connect to each host, TCP and TLS handshake, startup,
	// authentication and the read-write check included (default: the URL's connect_timeout,
	// else DefaultConnectTimeout). It also bounds the connections the pool opens in the
	// background, which pgxpool would otherwise give two minutes.
	ConnectTimeout time.Duration
	// KeepAlive is the silence after which the kernel probes a connection, every KeepAlive/3
	// (at least a second) after that (default DefaultKeepAlive; negative: Go's defaults).
	KeepAlive time.Duration
	// TCPUserTimeout (Linux) is how long sent data or keepalive probes may go unacknowledged
	// before the kernel drops the connection (default DefaultTCPUserTimeout; negative: the
	// system's, about fifteen minutes of retransmissions).
	TCPUserTimeout time.Duration
	// PingTimeout bounds the liveness ping an acquire sends on a connection idle for more than
	// a second; a connection that fails it is dropped and another taken (default
	// DefaultPingTimeout).
	PingTimeout time.Duration
	// PgBouncer makes every query use the unnamed prepared statement, which works through PgBouncer
	// in transaction pooling mode (no named statements survive across transactions there). A pool
	// without it behind such a pooler fails its statements with an error wrapping
	// stead.ErrInvalid that names this setting. LISTEN needs a session PgBouncer does not keep:
	// give pgtransport a direct connection for it (pgtransport.WithListenURL).
	PgBouncer bool
}

// Defaults for Config. Their reasons are in README's guarantees ("No hang on a silent server").
const (
	DefaultConnectAttempts = 15
	DefaultConnectDelay    = time.Second
	// DefaultCallTimeout is far above any call stead makes on a healthy server (milliseconds)
	// and within the few seconds a worker may take to move to a promoted standby.
	DefaultCallTimeout = 5 * time.Second
	// DefaultConnectTimeout is a connect's budget per host: a healthy server answers a connect
	// in milliseconds, and a multi-host URL tries the next host after it.
	DefaultConnectTimeout = 3 * time.Second
	DefaultKeepAlive      = 5 * time.Second
	DefaultTCPUserTimeout = 10 * time.Second
	DefaultPingTimeout    = 2 * time.Second
)

// Open opens a pool on the database at url and waits until one connection succeeds, retrying up
// to ConnectAttempts times, ConnectDelay apart, so that a worker started beside its database waits
// instead of failing. It honours ctx.
//
// url may name several hosts (postgres://app@db1:5432,db2:5432/app): a connection goes to the
// first that accepts a read-write session (target_session_attrs=read-write unless the URL says
// otherwise), trying the host that last did first and hosts that went silent last, so that a
// pool follows a promotion. A connection that finds itself on a read-only server (a demoted
// primary) is closed at the first statement refused for it (SQLSTATE 25006), which fails with
// stead.ErrUnavailable; the next connection goes to the read-write host.
//
// Every call on the pool gets a deadline (CallTimeout) when its context has none, every
// connection TCP keepalives and, on Linux, TCP_USER_TIMEOUT, and every connect ConnectTimeout
// per host: no call waits on a silent server for longer than those.
//
// The pool is the caller's: hand it to pgstore.New, pgtransport.New and pgturn.New, and close it
// after them. After the last attempt the error wraps stead.ErrUnavailable; a malformed url or a
// negative setting wraps stead.ErrInvalid at once.
func Open(ctx context.Context, url string, c Config) (*pgxpool.Pool, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%w: parse PostgreSQL URL: %v", errs.Invalid, err)
	}
	if c.MaxConns > 0 {
		cfg.MaxConns = c.MaxConns
	}
	if c.MinConns > 0 {
		cfg.MinConns = c.MinConns
	}
	if c.MinIdleConns > 0 {
		cfg.MinIdleConns = c.MinIdleConns
	}
	if c.MaxConnLifetime > 0 {
		cfg.MaxConnLifetime = c.MaxConnLifetime
	}
	if c.MaxConnIdleTime > 0 {
		cfg.MaxConnIdleTime = c.MaxConnIdleTime
	}
	if c.StatementTimeout > 0 {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(c.StatementTimeout.Milliseconds(), 10)
	}
	if c.PgBouncer {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	h := c.applyNet(cfg)
	attempts, delay := c.ConnectAttempts, c.ConnectDelay
	if attempts <= 0 {
		attempts = DefaultConnectAttempts
	}
	if delay <= 0 {
		delay = DefaultConnectDelay
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errs.Invalid, err)
	}
	h.pool.Store(pool)
	var last error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				pool.Close()
				return nil, fmt.Errorf("%w: connect cancelled after %d attempts: %w", errs.Unavailable, i, ctx.Err())
			case <-t.C:
			}
		}
		if last = ping(ctx, pool, c.callTimeout()); last == nil {
			return pool, nil
		}
		if err := Classify(last); errors.Is(err, errs.Invalid) {
			// A configuration error (a startup parameter PgBouncer refuses): no retry fixes it.
			pool.Close()
			return nil, fmt.Errorf("pgdb: connect: %w", err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	pool.Close()
	return nil, fmt.Errorf("%w: connect to PostgreSQL failed after %d attempts: %v", errs.Unavailable, attempts, last)
}

// Validate refuses negative settings, which pgxpool would otherwise take for "the default" or
// fail on much later.
func (c Config) Validate() error {
	switch {
	case c.MaxConns < 0, c.MinConns < 0, c.MinIdleConns < 0:
		return check.Invalidf("pgdb: negative pool size (max %d, min %d, min idle %d)", c.MaxConns, c.MinConns, c.MinIdleConns)
	case c.MaxConns > 0 && c.MinConns > c.MaxConns:
		return check.Invalidf("pgdb: min conns %d above max conns %d", c.MinConns, c.MaxConns)
	case c.MaxConnLifetime < 0, c.MaxConnIdleTime < 0, c.StatementTimeout < 0, c.ConnectDelay < 0,
		c.ConnectTimeout < 0, c.PingTimeout < 0:
		return check.Invalidf("pgdb: negative duration in the pool settings")
	case c.ConnectAttempts < 0:
		return check.Invalidf("pgdb: negative connect attempts %d", c.ConnectAttempts)
	case c.PgBouncer && c.StatementTimeout > 0:
		// PgBouncer refuses the startup parameter the timeout travels in, at every connect.
		return check.Invalidf("pgdb: StatementTimeout cannot travel through PgBouncer (it refuses " +
			"startup parameters): set statement_timeout on the database role instead " +
			"(ALTER ROLE ... SET statement_timeout)")
	}
	return nil
}

func (c Config) callTimeout() time.Duration {
	switch {
	case c.CallTimeout < 0:
		return 0
	case c.CallTimeout == 0:
		return DefaultCallTimeout
	}
	return c.CallTimeout
}

// ping checks one connection, bounded by timeout when ctx has no deadline (a ping is not a
// traced call).
func ping(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) error {
	if _, ok := ctx.Deadline(); !ok && timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return pool.Ping(ctx)
}

// applyNet sets what keeps a silent server from holding a call on cfg's connections (see
// applyConn), orders several hosts for each new connection, and sets the acquire's liveness ping.
func (c Config) applyNet(cfg *pgxpool.Config) *hosts {
	h := newHosts()
	c.applyConn(cfg.ConnConfig, h)
	before, after := cfg.BeforeConnect, cfg.AfterConnect
	cfg.BeforeConnect = func(ctx context.Context, cc *pgx.ConnConfig) error {
		h.order(cc)
		if before != nil {
			return before(ctx, cc)
		}
		return nil
	}
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if after != nil {
			if err := after(ctx, conn); err != nil {
				return err
			}
		}
		h.connected(conn)
		return nil
	}
	pingTimeout := c.PingTimeout
	if pingTimeout == 0 {
		pingTimeout = DefaultPingTimeout
	}
	cfg.PingTimeout = pingTimeout
	// The acquire's liveness ping of a connection idle for more than a second, sent here rather
	// than by pgxpool so that one that times out reports its host silent (and the host's other
	// idle connections are closed at once). A failed ping leaves the connection closed; answering
	// true then makes pgxpool's own ping fail at once and take the next connection.
	cfg.ShouldPing = func(ctx context.Context, p pgxpool.ShouldPingParams) bool {
		if p.IdleDuration <= time.Second {
			return false
		}
		pctx, cancel := context.WithTimeout(ctx, pingTimeout)
		defer cancel()
		err := p.Conn.Ping(pctx)
		if err != nil && errors.Is(pctx.Err(), context.DeadlineExceeded) {
			if a := hostOf(p.Conn.PgConn().Conn()); a != "" {
				h.wentSilent(a)
			}
		}
		return err != nil
	}
	return h
}

// applyConn sets the connect timeout, keepalives and TCP_USER_TIMEOUT, the call deadlines, the
// read-write check for several hosts, and the drop of a connection a read-only server refused.
func (c Config) applyConn(cc *pgx.ConnConfig, h *hosts) {
	connect := c.ConnectTimeout
	if connect == 0 {
		connect = cc.ConnectTimeout // the URL's connect_timeout
	}
	if connect == 0 {
		connect = DefaultConnectTimeout
	}
	cc.ConnectTimeout = connect
	keepAlive, user := c.KeepAlive, c.TCPUserTimeout
	if keepAlive == 0 {
		keepAlive = DefaultKeepAlive
	}
	if user == 0 {
		user = DefaultTCPUserTimeout
	}
	h.named(cc)
	cc.DialFunc = h.dial(dialer(connect, keepAlive, user))
	if h.several && cc.ValidateConnect == nil { // not len(Fallbacks): sslmode=prefer makes one per host
		cc.ValidateConnect = pgconn.ValidateConnectTargetSessionAttrsReadWrite
	}
	refuse := cc.OnPgError
	cc.OnPgError = func(pc *pgconn.PgConn, e *pgconn.PgError) bool {
		if e.Code == readOnlySQLTransaction {
			return false // a read-only server (a demoted primary, a standby): close the connection
		}
		return refuse == nil || refuse(pc, e)
	}
	cc.Tracer = withDeadlines(c.callTimeout(), h, cc.Tracer)
}

// ParseConnConfig parses url into the settings of one connection outside a pool (a listener's,
// say) with what Open gives a pool's connections: the connect timeout per host, keepalives and
// TCP_USER_TIMEOUT, a deadline on every call whose context has none, the read-write check for
// several hosts, and the drop of a connection a read-only server refused. A malformed url or a
// negative setting wraps stead.ErrInvalid.
func ParseConnConfig(url string, c Config) (*pgx.ConnConfig, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	cc, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%w: parse PostgreSQL URL: %v", errs.Invalid, err)
	}
	c.applyConn(cc, newHosts())
	return cc, nil
}
