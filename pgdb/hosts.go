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
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// hosts orders the hosts of a multi-host URL for each new connection of a pool: the one that
// last accepted a read-write session first, and hosts that recently went silent (a connect that
// got no answer before its timeout, a call that hit its deadline) last. pgx tries the hosts in the order of the URL, so without
// this every new connection after a failover would first wait out ConnectTimeout on the dead or
// demoted primary; a black-holed host costs that once, not once per connection.
type hosts struct {
	mu      sync.Mutex
	primary string               // "host:port" of the last read-write session
	silent  map[string]time.Time // "host:port" → when a read there last timed out
}

// suspectFor is how long a host whose connection went silent is tried last.
const suspectFor = 30 * time.Second

func newHosts() *hosts { return &hosts{silent: make(map[string]time.Time)} }

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
	h.mu.Unlock()
}

// dial wraps a DialFunc so that each connection knows the host it was dialled for and reports
// a read that timed out.
func (h *hosts) dial(next func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &hostConn{Conn: c, addr: addr, hosts: h}, nil
	}
}

// hostConn is a connection that knows the host it was dialled for.
type hostConn struct {
	net.Conn
	addr   string
	hosts  *hosts
	spoken bool // the server sent something: the connection got past its silent start
}

// Read reports a host that never answered: a read that hit its deadline before the server sent
// a byte is a connect that timed out. Silence later in a connection's life is the call
// deadlines' to report (deadlines.ended), since a listener waiting for notifications is silent
// by design.
func (c *hostConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.spoken = true
	} else if err != nil && !c.spoken && errors.Is(err, os.ErrDeadlineExceeded) {
		c.hosts.wentSilent(c.addr)
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
