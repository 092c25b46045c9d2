// Package schedule starts executions on a timetable, durably: schedules live in the store's
// database (memstore, sqlitestore, pgstore), not in a process's memory, so a restart loses none
// and a weekly schedule fires whether or not its processes live a week.
//
// A Schedule names a definition, a context template every execution it starts is created with,
// and its timing: a cron expression (five fields, or six with seconds first, or a descriptor such
// as @daily) read in a time zone, or a fixed interval. Jitter spreads starts; an overlap policy
// says what a tick does while the previous tick's execution runs (Skip, BufferOne, AllowAll,
// CancelPrevious); a catch-up policy says which ticks missed while no runner ran are started
// (Latest, All within the window, None older than the window). A schedule can be paused,
// resumed, triggered now and backfilled over a range.
//
// Get the schedules of a store with For, and run a Runner beside each worker (stead run does):
//
//	schedules, err := schedule.For(store)
//	r := schedworker.Runner(schedules, client) // client: a *worker.Client
//	go r.Run(ctx)
//
// Each tick fires exactly once however many runners run. The database fences them: a runner
// claims a tick by a compare-and-swap on the schedule's next tick, which one runner wins. And the
// execution a tick starts has a deterministic id, ExecutionID(schedule id, tick time), created
// before the claim: a runner that dies between the two leaves a tick that the next runner
// replays, finds its execution already there (ErrAlreadyExists), and only claims. No leader is
// elected and nothing is held in memory.
//
// Bad input (empty or non-UTF-8 ids, NUL bytes, a cron expression that does not parse or never
// fires, an unknown time zone, a context template over MaxContext) is refused with an error
// wrapping stead.ErrInvalid, and nothing is written. The package schedtest holds the rules a
// Backend must follow.
package schedule
