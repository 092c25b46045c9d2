package sqlitestore

import (
	"testing"
	"time"

	"github.com/steadhq/stead/internal/benchutil"
)

// CPUMeter reports the process CPU time (user + system) spent per benchmark iteration as
// "cpu-ns/op". On a shared machine wall time mostly measures the wait for a core; CPU time per
// operation stays put, so ratios computed from it are the ones to trust.
type CPUMeter struct{ start time.Duration }

// StartCPU begins measuring; call Report after the loop.
func StartCPU() CPUMeter { return CPUMeter{benchutil.CPUTime()} }

// Report adds the cpu-ns/op metric to b.
func (m CPUMeter) Report(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(benchutil.CPUTime()-m.start)/float64(b.N), "cpu-ns/op")
	}
}
