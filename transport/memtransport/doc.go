// Package memtransport is an in-memory transport backend for tests and single-process use.
// Nothing survives the process.
//
//	tr := memtransport.New()
//	defer tr.Close()
//
// New returns the checked *transport.Transport in front of the backend. The backend keeps, per
// priority, a heap of free groups ordered by the time they were last served and a heap of leased
// groups ordered by lease end, so a claim costs O(priorities · log groups) however large the
// backlog. Its clock is read at microsecond precision, like the SQL backends'.
package memtransport
