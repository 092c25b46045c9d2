// Package transporttest is the conformance suite every transport backend must pass. A backend's
// test calls Run with a Factory that builds a fresh, empty transport on the clock it is given:
//
//	func TestConformance(t *testing.T) {
//		transporttest.Run(t, func(t *testing.T, clock func() time.Time) *transport.Transport {
//			return memtransport.New(memtransport.WithClock(clock))
//		})
//	}
//
// The suite drives time through that clock, so leases, parks and fairness are checked without
// sleeping. It uses the public API only. Its subtests are named group/rule in lower snake case
// (TestConformance/lease/stale_changes_nothing), so -run can pick a group or a rule.
//
// Shared checks transports that share one database, as processes would; Benchmark measures one.
package transporttest
