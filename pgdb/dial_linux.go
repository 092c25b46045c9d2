package pgdb

import (
	"syscall"
	"time"
)

// tcpUserTimeout is TCP_USER_TIMEOUT from linux/tcp.h, which package syscall does not name.
const tcpUserTimeout = 0x12

// setUserTimeout bounds how long data sent on the socket may stay unacknowledged (and, with
// keepalives on, how long probes may go unanswered) before the kernel drops the connection.
func setUserTimeout(fd uintptr, d time.Duration) error {
	return syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout, int(d.Milliseconds()))
}
