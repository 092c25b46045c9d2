// Package otelstead is the OpenTelemetry worker.Observer: spans, metrics and gauges of a stead
// worker, and the W3C trace context that events carry between the processes of one trace. It is
// a package of its own, as River keeps otelriver apart, so that a program that records no
// telemetry does not build OpenTelemetry in: package worker knows only its Observer interface.
//
//	obs, err := otelstead.New(otelstead.Config{TracerProvider: tp, MeterProvider: mp})
//	w, err := worker.New(worker.Config{..., Observer: obs})
//	client := &worker.Client{Store: store, Transport: tr, Stamper: obs}
//
// A message claimed alone (an unbatched worker) is a "stead.step" span, a child of the trace
// context its event carries (Event.Trace, "traceparent" or "traceparent;tracestate"); in a batch,
// it is a link of the batch's "stead.batch" span to that context, with the step's attributes on
// the link. What a step emits and spawns, and the timers it arms, carry the step's context on, so
// that one order's life is one trace across hosts. The store and transport calls are client spans
// with the semantic conventions' db.* attributes. The metrics are stead.steps,
// stead.step.duration, stead.conflicts, stead.redeliveries, stead.action.errors and
// stead.timer.lateness, and the gauges stead.queue.depth, stead.queue.oldest_age,
// stead.outbox.backlog, stead.spawn.backlog and stead.executions where the backends report them.
// ARCHITECTURE.md ("Telemetry") has what each holds; bench/results/telemetry.md what it costs.
//
// A step's attributes are stead.execution.id, stead.event.id and stead.event.kind,
// stead.definition.id (and stead.definition.version for a versioned id, "order@3"),
// stead.step.outcome, stead.execution.version.before, and, left off where they would only repeat
// what a reader can tell:
//
//   - stead.execution.version.after and stead.execution.status only on a committed step, and the
//     version after only when it is not the version before + 1: a committed step without it
//     committed at version.before + 1, which is what every store commits (stead.Store.Commit);
//   - stead.step.conflict and stead.step.redelivery only when true (outcome conflict, duplicate);
//   - on a batch, whatever every step of the batch shares — the definition and its version, the
//     event kind, the outcome with its flag, the committed status — is set once on the
//     stead.batch span instead of on each link. A link always carries its execution, its event
//     id and its version before; a step's attributes are its link's, then its batch span's.
package otelstead
