//go:build !unix

package benchutil

import "time"

// CPUTime is not measured on this platform: it reads 0, and callers leave CPU metrics out.
func CPUTime() time.Duration { return 0 }
