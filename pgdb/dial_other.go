//go:build !linux

package pgdb

import "time"

// setUserTimeout does nothing where TCP_USER_TIMEOUT is not available: keepalives and the call
// deadlines still bound how long a silent server holds a call.
func setUserTimeout(uintptr, time.Duration) error { return nil }
