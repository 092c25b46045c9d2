// Package faultproxy is a TCP proxy for fault drills and tests: it forwards loopback
// connections to a server and can, on command, black-hole them — stop forwarding in both
// directions without closing anything, as a dead host or a network partition looks to a client
// whose packets are acknowledged by a middlebox (a proxy, a load balancer) — heal them, point
// new connections at another server, or cut every connection with a reset.
//
// Only the data the proxy holds is delayed: what it read before a black hole is delivered when
// it heals, as TCP delivers what it retransmits once a partition ends, so a client's late write
// (a COMMIT sent into the partition) can still reach the server after the heal.
package faultproxy

import (
	"net"
	"sync"
)

// Proxy forwards the connections it accepts on its loopback address to its target.
type Proxy struct {
	ln net.Listener

	mu     sync.Mutex
	target string
	held   bool          // black-holed
	heal   chan struct{} // closed when a black hole ends
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// New starts a proxy on a free loopback port forwarding to target ("host:port").
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, heal: make(chan struct{}), conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Port is the proxy's port.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// SetTarget points new connections at target; connections already open keep theirs.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
}

// BlackHole stops all forwarding, of open connections and of those accepted from now on,
// without closing anything: their clients see silence.
func (p *Proxy) BlackHole() {
	p.mu.Lock()
	if !p.held {
		p.held = true
		p.heal = make(chan struct{})
	}
	p.mu.Unlock()
}

// Heal ends a black hole: forwarding resumes where it stopped.
func (p *Proxy) Heal() {
	p.mu.Lock()
	if p.held {
		p.held = false
		close(p.heal)
	}
	p.mu.Unlock()
}

// Cut closes every open connection (their clients see the connection end, as when a server
// dies, at once or, while black-holed, when the black hole heals); the proxy keeps accepting
// new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, not an orderly close
		}
		_ = c.Close()
	}
	p.mu.Unlock()
}

// Close stops the proxy, closes every connection and waits for its goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	if p.held {
		p.held = false
		close(p.heal)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

// wait blocks while the proxy is black-holed; it reports false once the proxy is closed.
func (p *Proxy) wait() bool {
	p.mu.Lock()
	held, heal, closed := p.held, p.heal, p.closed
	p.mu.Unlock()
	if held {
		<-heal
		p.mu.Lock()
		closed = p.closed
		p.mu.Unlock()
	}
	return !closed
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve connects c to the target, once the proxy is not black-holed, and copies both ways.
func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	defer p.untrack(c)
	if !p.wait() {
		return
	}
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	s, err := net.Dial("tcp", target)
	if err != nil {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // refused upstream: refuse here too
		}
		return
	}
	if !p.track(s) {
		return
	}
	defer p.untrack(s)
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); p.copy(s, c) }()
	go func() { defer both.Done(); p.copy(c, s) }()
	both.Wait()
}

// copy forwards src to dst, holding each chunk read while the proxy is black-holed, and closes
// both when either side ends — that too only once the black hole heals: a server that dies
// behind a black hole stays silent, not closed, to its clients.
func (p *Proxy) copy(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if !p.wait() {
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed side: the deferred closes end the other direction too
		}
	}
}
