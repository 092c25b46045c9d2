// Package benchutil holds what the benchmark harnesses under bench/ and the package benchmarks
// share: the median of rounds, the process CPU time and the pgbench runner of the ceilings they
// compare with.
package benchutil

import "slices"

// Median returns the median of xs (the mean of the two middle values for an even count), or 0
// for none. xs is not modified.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
