// Package memtransport is an in-memory transport.Transport for tests and single-process use.
// Nothing survives the process. It keeps, per priority, a heap of free groups ordered by the time
// they were last served and a heap of leased groups ordered by lease end, so a claim costs
// O(priorities · log groups) however large the backlog.
package memtransport
