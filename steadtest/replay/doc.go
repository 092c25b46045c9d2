// Package replay checks a new version of a statechart definition against the paths executions
// of the old one took: it feeds each execution's recorded trace (stead.TraceStep, kept by the
// store when the definition records its trace) to the new version's engine, step by step, and
// reports the executions whose path would change. Run it before deploying version N+1 next to
// executions of version N, or in a test against executions a steadtest.Kit ran; `stead defs
// check` runs it against a store.
package replay
