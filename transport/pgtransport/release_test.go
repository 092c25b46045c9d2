package pgtransport_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/transport/pgtransport"
)

// cutProxy forwards TCP connections to a server. After cut, the connections open at that moment
// no longer carry the server's answers, and close shortly after: what a client sees when the
// network drops after its statement reached the server. New connections work as usual.
type cutProxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	conns  []*cutConn
	wg     sync.WaitGroup
}

type cutConn struct {
	client, server net.Conn
	cut            atomic.Bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{l: l, target: target}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		l.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.client.Close()
			c.server.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) accept() {
	for {
		client, err := p.l.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		c := &cutConn{client: client, server: server}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		p.wg.Go(func() { _, _ = io.Copy(server, client); server.Close() })
		p.wg.Go(func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := server.Read(buf)
				if n > 0 && !c.cut.Load() {
					if _, werr := client.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			client.Close()
		})
	}
}

// cut drops the answers of every connection open now and closes them after linger.
func (p *cutProxy) cut(linger time.Duration) {
	p.mu.Lock()
	conns := append([]*cutConn(nil), p.conns...)
	p.mu.Unlock()
	for _, c := range conns {
		c.cut.Store(true)
	}
	time.AfterFunc(linger, func() {
		for _, c := range conns {
			c.client.Close()
			c.server.Close()
		}
	})
}

func (p *cutProxy) url(t *testing.T, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.l.Addr().String()
	return u.String()
}

// TestLostClaimAnswerReleasesGroups claims through a connection whose answer is lost after the
// claim committed on the server: the claimer gets an error, and the transport must free the
// group it cannot know it holds within moments, not after the claim's hour-long lease.
func TestLostClaimAnswerReleasesGroups(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.Schema(t)
	direct := open(t, schema)
	defer direct.Close()
	ctx := context.Background()
	u, err := url.Parse(pgdbtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, u.Host)
	pool, err := pgdb.Open(ctx, proxy.url(t, pgdbtest.URL()), pgdb.Config{MaxConns: 1, ConnectAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	cut := openOn(t, pool, schema, pgtransport.WithoutListen())
	defer cut.Close()
	// A claim of nothing first, so that the pool's one connection is open and has the claim
	// prepared: the claim after the cut then goes to the server in one write and runs there.
	if l, err := cut.Claim(ctx, "warm", time.Hour, 0); err != nil || l != nil {
		t.Fatalf("claim of an empty queue: %v %v", l, err)
	}
	if err := direct.Publish(ctx, "G", event("e1"), 0); err != nil {
		t.Fatal(err)
	}
	proxy.cut(300 * time.Millisecond)
	l, err := cut.Claim(ctx, "lost", time.Hour, 0)
	if err == nil {
		t.Fatalf("claim through a cut connection answered %+v", l)
	}
	if errors.Is(err, stead.ErrUnavailable) {
		t.Fatalf("claim: %v: the claim must have reached the server for this test", err)
	}
	var got bool
	deadline := time.Now().Add(10 * time.Second)
	for !got && time.Now().Before(deadline) {
		l, err := direct.Claim(ctx, "other", time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		got = l != nil
		time.Sleep(50 * time.Millisecond)
	}
	if !got {
		t.Fatal("the group stayed held by the lost claim: no other claimer got the message within 10s")
	}
}
