// Package worker drives statechart executions durably: it wires an execution store
// (*stead.Store), an event transport (*transport.Transport) and a step function (a Machine, usually
// a *chart.Engine) into workers.
//
//	w, err := worker.New(worker.Config{Store: store, Transport: tr, Machines: machines})
//	err = w.Run(ctx) // until ctx is done; finishes the steps in flight
//
// A Worker claims messages from the transport (one per execution at a time), loads the execution
// together with the "already processed?" answer, steps it, commits the new state with every side
// effect of the step in one store transaction, then relays what the step produced: it creates
// spawned child executions and publishes emitted events, acknowledges them in the store, and
// finally acknowledges the message. A crash at any point between commit and the last
// acknowledgement leaves rows in the store's outbox and spawn tables; the worker's relay delivers
// such leftovers on start and periodically (claims carry a lease, so several workers share the
// work), and the dedupe marker committed with each step makes a redelivered event a no-op. Durable
// timers are swept on an interval and turned into timeout events.
//
// Delivery is at least once and application is exactly once: an event may be published twice,
// but an execution applies each event id at most once, because the processed-event marker commits
// atomically with the state it produced. Actions with external side effects must therefore be
// idempotent: a step can run again if the worker dies before its commit.
//
// A Client is the sender side: Create persists a new execution together with its start event in
// the outbox (so a crash right after cannot lose the start), Send publishes an event.
//
// With Config.SharedTx (pgtx.New, for pgstore and pgtransport on one pool) a batch's claim, load,
// commit, publish and acknowledgement run in one database transaction instead.
package worker
