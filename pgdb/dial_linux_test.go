package pgdb

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestDialerSocketOptions: the pool's connections carry the keepalive and TCP_USER_TIMEOUT the
// settings ask for, as the kernel reports them.
func TestDialerSocketOptions(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tests := []struct {
		name                 string
		keepAlive, user      time.Duration
		wantIdle, wantUserMs int
	}{
		{"defaults", DefaultKeepAlive, DefaultTCPUserTimeout, 5, 10000},
		{"custom", 7 * time.Second, 3 * time.Second, 7, 3000},
		{"no user timeout", 7 * time.Second, -1, 7, 0},
	}
	for _, tt := range tests {
		c, err := dialer(time.Second, tt.keepAlive, tt.user)(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		raw, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var keep, idle, user int
		var gerr error
		err = raw.Control(func(fd uintptr) {
			if keep, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE); gerr != nil {
				return
			}
			if idle, gerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE); gerr != nil {
				return
			}
			user, gerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout)
		})
		c.Close()
		if err != nil || gerr != nil {
			t.Fatal(err, gerr)
		}
		if keep != 1 || idle != tt.wantIdle || user != tt.wantUserMs {
			t.Errorf("%s: keepalive %d, idle %d s, user timeout %d ms; want 1, %d, %d", tt.name, keep, idle, user, tt.wantIdle, tt.wantUserMs)
		}
	}
}
