// Package worker runs your flows: a Worker runs the steps of executions, a Client starts them,
// sends them events, waits for them to finish and operates them. It wires an execution store
// (*stead.Store: sqlitestore, pgstore, memstore), an event transport (*transport.Transport) and
// a step function (a Machine, usually the *chart.Engine of your definition and actions).
//
//	w, err := worker.New(worker.Config{Store: store, Transport: tr, Machines: machines})
//	go w.Run(ctx) // until ctx is done; finishes the steps in flight
//
//	client := &worker.Client{Store: store, Transport: tr, Known: machines}
//	_, err = client.Create(ctx, "purchase", "p-1", []byte(`{"amount":120}`))
//	_, err = client.Send(ctx, "p-1", stead.Event{ID: "p-1-delivered", Kind: "delivered"})
//	exe, err := client.Wait(ctx, "p-1") // done, cancelled or failed
//
// A Worker logs to slog.Default() unless Config.Logger says otherwise; an execution that fails
// is a WARN line naming it, its state, the event and the error, and Config.OnFinish hears of
// every execution the worker finishes. Package retention deletes finished executions; the
// examples/firstflow program in the repository puts it all together.
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
// In the shared-transaction mode (Config.SharedTx) a batch may take several queued messages of
// one execution (Config.GroupDepth) and apply them as a chain: in order, each from the state the
// one before left, committed once with every event recorded processed and the version advanced
// by one per event, so that a backlog costs one load and one update of each execution per batch
// rather than per event.
//
// Delivery is at least once and application is exactly once: an event may be published twice,
// but an execution applies each event id at most once, because the processed-event marker commits
// atomically with the state it produced. Actions may do I/O — HTTP calls, payments, model calls —
// through chart.ActionContext.Context (the worker passes it through ContextMachine and ends it at
// Config.ActionTimeout and at shutdown), and must make every external effect idempotent with
// chart.ActionContext.Key: a step runs again if the worker dies before its commit.
//
// Steps of different executions run side by side, up to Config.MaxWorkers at once across the
// claim loops; the steps of one execution run one at a time, in order. A loop claims no more
// messages than it has free places for, so nothing it claims waits behind a slow action, and a
// batch commits the steps that have ended without waiting for one still running. While a step
// runs, its message's lease is extended every Visibility/3 (transport.Extender), so a slow action
// needs no long lease and a worker that dies frees its work within Visibility.
//
// A Client is the sender side: Create persists a new execution together with its start event in
// the outbox (so a crash right after cannot lose the start), Send publishes an event. With
// Client.Sender set to pgtx.New of the store and the transport, Create commits the execution and
// queues its start in one transaction, and Send checks the execution and takes its priority in
// the publish's own statement.
//
// A Client is also the operator's: Control (and Suspend, Resume, Cancel, Reset, SetState, Retry)
// applies a control command to a stored execution at once, as a compare-and-swap commit whose
// processed marker is the command's id, so that it acts even behind a backlog or a parked queue
// and applies once however often it is sent; ControlMatching applies one to every execution a
// listing filter selects. Commands cascade to the unfinished children as control events in the
// outbox, which the client applies to them right away and a worker's relay applies if the client
// died first. Workers park the events of a suspended execution (nacked with SuspendRecheck), drop
// the backlog of a cancelling one until the cancel's own event, which ends it, and drop whatever
// reaches a cancelled one.
//
// Every batch takes one path (take places, claim, load, step, commit and settle); what a backend
// changes is only how the batch reaches its databases. With Config.SharedTx (pgtx.New, for
// pgstore and pgtransport on one pool) a batch's claim, load, commit, publish and acknowledgement
// run in one database transaction, and what its steps emit is published in it rather than
// through the outbox. With Config.Finisher (sqlitetx.New, for sqlitestore and sqlitetransport on
// one SQLite file) the claim and the load are transactions of their own, and each round's commit,
// publish and acknowledgement one more, which is never held while actions run. ARCHITECTURE.md
// ("One event's path") follows one event file by file.
//
// Config.Observer watches the worker at work (its batches, steps, calls and timers); nil watches
// nothing, at the cost of a nil check a hook. Package otelstead is the OpenTelemetry Observer:
// spans, metrics and the W3C trace context that events carry (stead.Event.Trace), which
// Client.Stamper stamps on what Send and Create send and a step passes on to what it emits.
package worker
