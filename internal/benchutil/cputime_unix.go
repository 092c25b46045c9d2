//go:build unix

package benchutil

import (
	"syscall"
	"time"
)

// CPUTime is the CPU time (user + system) the process has used so far. On a shared machine wall
// time mostly measures the wait for a core; CPU time per operation stays put, so ratios computed
// from it are the ones to trust.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
