// Package stead keeps the durable state of Go programs that advance in steps — statechart
// executions (an order, an approval, a device's lifecycle) and assistant conversation turns — so
// that they survive a crash, never lose an event and never apply one twice.
//
// You write a flow as a statechart with package chart (a definition in YAML or Go, and your
// actions as Go functions), run it with package worker (worker.New runs the steps; a
// worker.Client creates executions, sends them events and waits for them to finish), and keep
// its state in a store: sqlitestore on one host, pgstore for many hosts sharing PostgreSQL,
// memstore in tests, each with its transport (package transport). An assistant's turns go to
// package turn. examples/firstflow in the repository is a complete program to start from;
// docs/yaml.md is the reference of a definition.
//
// This package is the vocabulary (Execution, Event, Bundle, …) and the execution store (Store)
// that the worker and the backends share; most programs use it through them.
//
// An Execution is one run of a statechart. Each step of it loads the execution (LoadForEvent
// says in the same round-trip whether the event was already applied), computes the next state
// and a Bundle of side effects (events to emit, a processed-event marker, or several for a step
// that applied several queued events, child executions to spawn, timers to arm or disarm, a
// trace step), and commits both with Store.Commit: one
// transaction, guarded by a compare-and-swap on Execution.Version. The loser of a race gets an
// error matching ErrConflict; Commit never changes the execution it is given, and returns the new
// version.
//
// After commit, relays deliver what the step produced: ClaimOutbox and ClaimSpawns lease rows so
// that relays on many hosts never hand out the same row at once, AckOutbox and AckSpawns remove
// them once delivered, DueTimers and DeleteTimer fire durable timers.
//
// # The seam
//
// Store is the checked front of a Backend. It validates every argument and normalises every value
// once (times in UTC at microsecond precision, empty JSON as nil, limits resolved), so a Backend
// only runs storage code and every backend answers alike. The bundled backends are memstore (in
// memory, for tests), sqlitestore (one host, no server) and pgstore (PostgreSQL, many worker
// hosts); each constructor returns a *Store. A backend written elsewhere implements Backend and is
// wrapped with NewStore; storetest.Run is the conformance suite every one of them passes.
//
// Errors wrap one of the sentinels (ErrNotFound, ErrConflict, ErrAlreadyExists, ErrUnavailable,
// ErrTimeout, ErrInvalid, ErrClosed); check them with errors.Is. Bad input (empty ids, NUL bytes,
// invalid UTF-8, oversized payloads, times outside the years 1 to 9999, negative limits, forged
// cursors) is refused with ErrInvalid before anything is written.
package stead
