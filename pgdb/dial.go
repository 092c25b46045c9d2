package pgdb

import (
	"context"
	"net"
	"syscall"
	"time"
)

// dialer returns the DialFunc of a pool's connections: a connect bounded by timeout, TCP
// keepalives every keepAlive of silence, and on Linux TCP_USER_TIMEOUT, so that a server whose
// packets stop arriving (a dead host, a partition) is noticed by the kernel within seconds
// instead of the system's defaults (about two hours of silence before the first keepalive, about
// fifteen minutes of retransmission before a write gives up).
func dialer(timeout, keepAlive, userTimeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout, KeepAliveConfig: net.KeepAliveConfig{Enable: true}} // Go's defaults
	if keepAlive > 0 {
		d.KeepAliveConfig.Idle = keepAlive
		d.KeepAliveConfig.Interval = max(keepAlive/3, time.Second)
		d.KeepAliveConfig.Count = 3
	}
	if userTimeout > 0 {
		d.Control = func(network, address string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) { serr = setUserTimeout(fd, userTimeout) })
			if err != nil {
				return err
			}
			return serr
		}
	}
	return d.DialContext
}
