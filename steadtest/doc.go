// Package steadtest tests statechart flows without waiting: it runs definitions with their real
// actions on the memory backend, driven by a real worker, under a virtual clock.
//
// A Kit owns a memory store, a memory transport and one worker whose clock is the kit's. Time
// passes only when the test says so: Advance moves the clock and fires every timer that falls
// due on the way — state timeouts, the backoff timers of retried actions, time-to-live expiries
// — each at its own instant and in order, with no real sleeping, so a flow holding a 24-hour
// timer is tested in milliseconds. Each call returns once the worker has applied what it made
// claimable, so a test reads the outcome right after it without polling.
//
// The kit records what the flow did, for assertions: every action call with its idempotency key
// and attempt (Calls), every event a step emitted (Emitted), and every step's trace (Trace,
// Path). Wait and Expect let virtual time pass until an execution reaches a state or status,
// bounded, and say what they saw when it does not.
//
// Package steadtest/replay checks a new version of a definition against the traces recorded by
// executions of the old one.
package steadtest
