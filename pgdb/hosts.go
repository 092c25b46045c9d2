package pgdb

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// hosts orders the hosts of a multi-host URL for each new connection of a pool: the one that
// last accepted a read-write session first, and hosts that recently went silent (a connect that
// got no answer before its timeout, a call that hit its deadline) last. pgx tries the hosts in
// the order of the URL, so without this every new connection after a failover would first wait
// out ConnectTimeout on the dead or demoted primary; a black-holed host costs that once, not
// once per connection. It also knows each connection's host (hostConn), which is how a silent
// host's idle connections are found and closed, and how its cancel requests are bounded.
type hosts struct {
	mu       sync.Mutex
	primary  string               // "host:port" of the last read-write session
	silent   map[string]time.Time // "host:port" → when a read there last timed out
	dropping map[string]bool      // hosts whose idle connections are being closed
	// several is true when the config names more than one host: only then is a silent host
	// given less than the connect timeout, since there is somewhere else to go.
	several bool

	// pool is the pool the connections belong to, once Open made it: when a host goes silent
	// its idle connections are closed at once, instead of each costing an acquire its liveness
	// ping (a pool of dead connections would otherwise take one ping timeout per connection).
	pool atomic.Pointer[pgxpool.Pool]
}

// suspectFor is how long a host whose connection went silent is tried last.
const suspectFor = 30 * time.Second

func newHosts() *hosts {
	return &hosts{silent: make(map[string]time.Time), dropping: make(map[string]bool)}
}

// target is one host of a connection config, in the shape pgconn keeps it.
type target struct {
	host string
	port uint16
	tls  *tls.Config
}

func (t target) addr() string { return net.JoinHostPort(t.host, strconv.Itoa(int(t.port))) }

// order rewrites cfg's host and fallbacks in the order to try them. A config with one host is
// left alone.
func (h *hosts) order(cfg *pgx.ConnConfig) {
	if len(cfg.Fallbacks) == 0 {
		return
	}
	ts := []target{{cfg.Host, cfg.Port, cfg.TLSConfig}}
	for _, f := range cfg.Fallbacks {
		ts = append(ts, target{f.Host, f.Port, f.TLSConfig})
	}
	now := time.Now()
	h.mu.Lock()
	rank := func(t target) int {
		a := t.addr()
		switch {
		case now.Sub(h.silent[a]) < suspectFor:
			return 2
		case a == h.primary:
			return 0
		}
		return 1
	}
	slices.SortStableFunc(ts, func(a, b target) int { return rank(a) - rank(b) })
	h.mu.Unlock()
	cfg.Host, cfg.Port, cfg.TLSConfig = ts[0].host, ts[0].port, ts[0].tls
	cfg.Fallbacks = cfg.Fallbacks[:0:0]
	for _, t := range ts[1:] {
		cfg.Fallbacks = append(cfg.Fallbacks, &pgconn.FallbackConfig{Host: t.host, Port: t.port, TLSConfig: t.tls})
	}
}

// named records the hosts a connection config names.
func (h *hosts) named(cfg *pgx.ConnConfig) {
	first := target{cfg.Host, cfg.Port, nil}.addr()
	for _, f := range cfg.Fallbacks {
		if (target{f.Host, f.Port, nil}).addr() != first {
			h.several = true
		}
	}
}

// connected records the host a new session landed on (read-write: it passed the pool's
// validation).
func (h *hosts) connected(c *pgx.Conn) {
	a := hostOf(c.PgConn().Conn())
	if a == "" {
		return
	}
	h.mu.Lock()
	h.primary = a
	delete(h.silent, a)
	h.mu.Unlock()
}

func (h *hosts) wentSilent(addr string) {
	h.mu.Lock()
	h.silent[addr] = time.Now()
	if h.primary == addr {
		h.primary = ""
	}
	drop := !h.dropping[addr] && h.pool.Load() != nil
	if drop {
		h.dropping[addr] = true
	}
	h.mu.Unlock()
	if drop {
		go h.dropIdle(addr) // the caller is inside a call: do not hold it up
	}
}

// dropIdle closes the pool's idle connections to addr. A connection's close sends one message
// and is given a moment: on a silent host it cannot be acknowledged anyway.
func (h *hosts) dropIdle(addr string) {
	defer func() {
		h.mu.Lock()
		delete(h.dropping, addr)
		h.mu.Unlock()
	}()
	for _, c := range h.pool.Load().AcquireAllIdle(context.Background()) {
		if hostOf(c.Conn().PgConn().Conn()) == addr {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			_ = c.Conn().Close(ctx) // released closed, the pool destroys it
			cancel()
		}
		c.Release()
	}
}

// connectingKey marks the context of a connect (set by the deadlines tracer at its start). pgx
// dials outside a connect only to send a cancel request, when a call on a connection ended
// early.
type connectingKey struct{}

// cancelBudget bounds a cancel request: a dial, one message, and the server's close. pgx gives
// it fifteen seconds, during which the connection it cancels still counts against the pool's
// size; on a silent server all of that would be spent.
const cancelBudget = time.Second

// silentConnectBudget bounds a connect to a host that went silent, in place of the connect
// timeout, until the host answers.
const silentConnectBudget = time.Second

// errSilentHost refuses a cancel request to a host that just went silent.
var errSilentHost = errors.New("pgdb: no cancel request to a host that went silent")

// dial wraps a DialFunc so that each connection knows the host it was dialled for and reports
// a read that timed out, and so that a cancel request is bounded by cancelBudget (and not sent
// at all to a host that just went silent).
func (h *hosts) dial(next func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		connecting := ctx.Value(connectingKey{}) != nil
		h.mu.Lock()
		silent := time.Since(h.silent[addr]) < suspectFor
		h.mu.Unlock()
		if !connecting {
			if silent {
				return nil, errSilentHost
			}
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, cancelBudget)
			defer cancel()
		}
		c, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		hc := &hostConn{Conn: c, addr: addr, hosts: h}
		switch {
		case !connecting:
			_ = c.SetDeadline(time.Now().Add(cancelBudget))
		case silent && h.several:
			// A host that went silent is tried last, and briefly: while a standby is being
			// promoted, a connect finds it read-only and goes on to the silent host, and the
			// full connect timeout there would hold the caller past the promotion. Its first
			// answer lifts the limit.
			hc.probing = true
			_ = c.SetDeadline(time.Now().Add(silentConnectBudget))
		}
		return hc, nil
	}
}

// hostConn is a connection that knows the host it was dialled for.
type hostConn struct {
	net.Conn
	addr     string
	hosts    *hosts
	spoken   bool        // the server sent something: the connection got past its silent start
	probing  bool        // a connect to a silent host, under silentConnectBudget until it answers
	timedOut atomic.Bool // the last read ended at a deadline
}

// closeGrace is how long a connection whose last read timed out may still wait on a deadline
// set after it: pgx drains a connection it closes after a failed call for up to fifteen
// seconds, during which it still counts against the pool's size. A server that was silent once
// gets half a second.
const closeGrace = 500 * time.Millisecond

func (c *hostConn) SetDeadline(t time.Time) error     { return c.Conn.SetDeadline(c.capped(t)) }
func (c *hostConn) SetReadDeadline(t time.Time) error { return c.Conn.SetReadDeadline(c.capped(t)) }

// capped shortens a deadline (never "no deadline") on a connection whose last read timed out.
func (c *hostConn) capped(t time.Time) time.Time {
	if !t.IsZero() && c.timedOut.Load() {
		if limit := time.Now().Add(closeGrace); t.After(limit) {
			return limit
		}
	}
	return t
}

// Read reports a host that never answered: a read that hit its deadline before the server sent
// a byte is a connect that timed out. Silence later in a connection's life is the call
// deadlines' to report (deadlines.ended), since a listener waiting for notifications is silent
// by design.
func (c *hostConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		if c.probing {
			c.probing = false
			_ = c.Conn.SetDeadline(time.Time{})
		}
		c.spoken = true
		c.timedOut.Store(false)
	} else if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		c.timedOut.Store(true)
		if !c.spoken {
			c.hosts.wentSilent(c.addr)
		}
	}
	return n, err
}

// hostOf returns the "host:port" a connection was dialled for, "" if unknown.
func hostOf(c net.Conn) string {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	if hc, ok := c.(*hostConn); ok {
		return hc.addr
	}
	return ""
}
