// Package chart is where you write a flow: a statechart definition (YAML, read by LoadFile or
// Parse — docs/yaml.md in the repository lists every key — or the Go Builder) and the actions
// and guards it names, registered as Go functions in a Registry. NewEngine checks the two
// against each other and compiles them; hand the engine to package worker, which runs it
// durably:
//
//	def, err := chart.LoadFile("purchase.yaml")
//	reg := chart.NewRegistry().Action("notify", notify)
//	eng, err := chart.NewEngine(def, reg)
//	machines := worker.Machines{eng.DefinitionID(): eng}
//
// The engine is pure: it advances an execution by one event, returning the next execution and
// exactly the stead.Bundle a store commits with it: emitted events, timer operations, spawn
// intents, a trace step, the processed event id.
//
// # Model
//
// A Definition is a tree of states. A state is atomic, compound (children and an initial
// child, optionally shallow or deep history), parallel (orthogonal regions), final (with an
// outcome such as success, failure, cancelled, or any name), a choice point (guarded branches
// in order, the last one the else) or a selector (an action registered with Registry.Selector
// returns a label, and the state's case for it is taken). Choice points and selectors are left
// in the step that enters them. A state may defer event kinds: they wait in
// Execution.Deferred and are delivered again, in order, once a state that does not defer them
// is entered. Transitions fire on an event kind, with an
// optional guard and actions, to any state in the same region; exit and entry run in order
// through the transition's domain (the least common proper ancestor of source and target, or
// the source for an internal transition). A transition without target only runs its actions.
// Completion (done) transitions of a compound state fire when one of its final children is
// entered; a final state directly at the top finishes the execution with its outcome.
//
// Timers: a state's timeout arms a durable timer when the state is entered and disarms it when
// the state is exited, as TimerOps in the same bundle. The runtime fires it with TimeoutEvent.
//
// Events the configuration does not handle are ignored; system kinds (KindStart, KindCancel,
// KindTimeout, KindFinished) are handled by the engine itself. A suspended execution accepts
// only KindCancel. A cancel leaves the active states as a transition would: their exit actions
// run, innermost first (one that fails is recorded in Error and the cancel goes on), their timers
// are disarmed and the unfinished regions cancelled.
//
// # Operator commands
//
// The control kinds (KindSuspend, KindResume, KindCancelRequest, KindReset, KindSetState,
// KindRetry) are an operator's commands; worker.Client applies them to stored executions at once
// instead of queueing them. Engine.Control applies the three that follow the definition: reset
// (back to the initial configuration, a restart that runs no exit action), set-state (an
// external transition to a named state, with its exits and entries), and retry (the event of a
// failed execution's dead letter applied again, from the state it failed in). A failing step
// records that dead letter (Execution.DeadLetter), and a starting one the context it started with
// (Execution.StartContext), which a reset without a context returns to.
//
// Parallel regions run as child executions. Entering a parallel state spawns one child per
// region (id "<parent id>:<region path>:<n>", n counting entries of the parallel state) and
// records the join in Execution.Children. A child runs only its region; when it finishes it
// sends KindFinished to its parent, which leaves the parallel state through a completion
// transition once every region has finished, or at once when a region finishes with one of the
// state's early-exit outcomes (the others are cancelled). The regions' final contexts are then
// in the parent's context under RegionResultsKey. Events the parent does not handle while in a
// parallel state are forwarded to its unfinished regions.
//
// Invoked machines: an invoking state (State.Invoke) runs another definition as a child
// execution (id "<parent id>:<state path>:<n>"), or one per item of a context list (a fan-out,
// "...:<n>:<i>"), with inputs copied from the parent's context. The spawn intent names the
// definition (SpawnTarget decodes it), which the worker resolves among the machines it knows.
// When the child finishes, the keys its definition Returns are copied into the parent's context
// (a fan-out collects them in item order) and the state's completion transitions route on the
// outcome; leaving the state cancels the unfinished children.
//
// Actions and guards are Go functions registered by name in a Registry. An action gets an
// ActionContext (the context, the event, and an idempotency key "<execution id>:<version>:<n>")
// and returns an ActionResult: context keys to set or delete and events to send. It may also set
// keys through the ActionContext (Set, SetFloat, SetInt, SetString, SetBool), which costs no map
// and, for the typed setters, no allocation; those changes apply before the result's. An action
// error, once its retries are spent, takes the error transition (on_error) of the nearest active
// state that declares one, starting at the state the action belongs to, or else fails the
// execution.
//
// # Retries
//
// Every action has a retry policy: its own in Definition.Retry, else the definition's
// DefaultRetry, else the engine's (WithDefaultRetry), else DefaultRetry() — five attempts over
// about 15 s; NoRetry ("none" in YAML) turns it off. A policy (Retry: attempts, exponential
// backoff with a cap and a jitter derived from the execution and event ids) applies wherever the
// action runs. When such an action fails with
// attempts left, the step is discarded and a durable timer (RetryTimerPath) applies the event
// again after the backoff; events arriving meanwhile wait in Execution.Deferred, behind it. Every
// attempt gives its actions the first attempt's idempotency keys and its number
// (ActionContext.Attempt). The last failure takes the error transition or fails the execution.
//
// # Typed context and expiry
//
// Definition.Context declares context keys (ContextKey: type, default, required): a start
// context is checked and defaulted (Engine.PrepareContext), and actions cannot set undeclared
// keys or values of another type. Definition.TTL gives executions a time to live, a durable
// timer (TTLTimerPath) that ends them with OutcomeExpired, re-armed by every event with
// RearmTTL.
//
// Definitions come from the Builder (New) or from YAML (Parse, LoadFile), and both go through
// Validate, which reports every problem with its position. Definition.Mermaid draws a diagram.
//
// # Determinism
//
// Engine.Step itself reads no clock, does no I/O and uses no randomness: ids of emitted events,
// child executions and timers derive from the execution id, its version and the order of
// actions, and contexts are encoded with sorted keys. Replaying the same events with the same
// times gives byte-identical executions and bundles.
//
// Actions are where the I/O goes: calling an API, writing a row, sending a mail is what they
// are for. But a step can run more than once — a retry, a redelivery after a worker died before
// its commit, a commit lost to a concurrent one — and only the committed run counts. So give the
// other side ActionContext.Key(), which is the same on every run of the same step, to drop a
// repeat; and keep an action well within the worker's lease (worker.Config.Visibility), handing
// long work to a system that reports back with an event. A failing action is retried by its
// policy (see Retries), then takes the error transition or fails the execution.
package chart
