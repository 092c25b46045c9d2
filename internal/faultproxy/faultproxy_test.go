package faultproxy_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/steadhq/stead/internal/faultproxy"
)

// echo starts a line echo server and returns its address.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					l, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(l)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, r *bufio.Reader, within time.Duration) (string, error) {
	_ = c.SetDeadline(time.Now().Add(within))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return "", err
	}
	return r.ReadString('\n')
}

func TestBlackHoleHealCut(t *testing.T) {
	p, err := faultproxy.New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if l, err := roundTrip(c, r, time.Second); err != nil || l != "ping\n" {
		t.Fatalf("before the black hole: %q, %v", l, err)
	}
	p.BlackHole()
	if l, err := roundTrip(c, r, 200*time.Millisecond); err == nil {
		t.Fatalf("black-holed: got %q, want a timeout", l)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("black-holed: %v, want a timeout (no reset)", err)
	}
	// A connection opened during the black hole is accepted and silent too.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	r2 := bufio.NewReader(c2)
	if _, err := roundTrip(c2, r2, 200*time.Millisecond); err == nil {
		t.Fatal("a connection accepted in the black hole answered")
	}
	p.Heal()
	// What was sent into the black hole arrives after the heal, in order.
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if l, err := r.ReadString('\n'); err != nil || l != "ping\n" {
		t.Fatalf("after the heal, the held line: %q, %v", l, err)
	}
	if l, err := roundTrip(c, r, time.Second); err != nil || l != "ping\n" {
		t.Fatalf("after the heal: %q, %v", l, err)
	}
	p.Cut()
	if _, err := roundTrip(c, r, time.Second); err == nil {
		t.Fatal("a cut connection still answered")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("cut: %v, want the connection ended, not a timeout", err)
	}
}

func TestRefusedTarget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	p, err := faultproxy.New(dead)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The proxy resets the connection as soon as it accepted it: the reset may reach the dial
	// itself or the first round trip, never a timeout.
	c, err := net.Dial("tcp", p.Addr())
	if err == nil {
		defer c.Close()
		_, err = roundTrip(c, bufio.NewReader(c), time.Second)
	}
	if err == nil {
		t.Fatal("a proxy whose target refuses answered")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("%v: want the connection ended at once", err)
	}
	p.SetTarget(echo(t))
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if l, err := roundTrip(c3, bufio.NewReader(c3), time.Second); err != nil || l != "ping\n" {
		t.Fatalf("after SetTarget: %q, %v", l, err)
	}
}

// TestServerGoneInBlackHole: a server that closes a connection while the proxy black-holes it
// stays silent to the client until the heal.
func TestServerGoneInBlackHole(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	p, err := faultproxy.New(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := <-accepted
	p.BlackHole()
	s.Close()
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("read data from a closed server")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("the server's close came through the black hole: %v", err)
	}
	p.Heal()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("read data from a closed server")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("after the heal the close did not come through")
	}
}
