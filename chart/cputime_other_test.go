//go:build !unix

package chart

import "time"

// cpuTime is not measured here; the CPU-time metric is left out.
func cpuTime() time.Duration { return 0 }
