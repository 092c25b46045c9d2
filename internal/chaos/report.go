package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Report is what a drill did and found.
type Report struct {
	Plan Plan
	Took time.Duration

	Kills, Stops   int        // faults injected
	Restarts       []Restart  // one per server crash
	Failovers      []Failover // one per failover, black hole or partition (failover drills)
	Published      int        // work events published (and so due to be applied once each)
	Arms           int        // arm events published
	PublishRetries int        // publishes sent again after a failure (may deliver twice)

	Lost             int // work events published and never applied (or applied and not committed)
	Doubled          int // events applied twice under different idempotency keys
	DoubledBeyondKey int // work events counted twice by an execution (its own counter)
	Replayed         int // idempotency keys that ran more than once (absorbed by the key)

	TimersArmed, TimersFired int
	TimerMismatch            int           // timers armed and never fired, or fired twice
	EarlyTimers              int           // timers that fired before they were due
	EarliestBy               time.Duration // the most one fired early by

	StuckOutbox, StuckTimers, StuckMessages int    // rows left once the drill converged
	NotConverged                            string // what still lagged when the wait gave up
	UncleanExits                            []string

	CAS CASResult
}

// Restart is one crash of the server and the recovery after it.
type Restart struct {
	Burst     int           // events queued just before the crash
	Backlog   int           // messages waiting in the queue at the crash
	FirstStep time.Duration // from the server accepting connections to the first step applied
	Drained   time.Duration // from the server accepting connections to the burst applied
}

// CASResult is the compare-and-swap race: racers on two pools increment one execution's counter.
type CASResult struct {
	Rounds, Racers int
	Conflicts      int // lost compare-and-swaps (retried)
	Errors         int // other errors (retried)
	LostUpdates    int // successful commits missing from the final counter
	Took           time.Duration
}

// FailoverWithin is how soon after a promotion the workers must step on the new primary, for a
// clean failover and a black-holed primary alike.
const FailoverWithin = 5 * time.Second

// Problems returns what must not happen and did: lost or doubled events, stuck rows, early or
// unbalanced timers, workers that did not shut down cleanly, lost updates, restarts whose
// recovery took longer than within, and failovers whose took longer than FailoverWithin.
func (r *Report) Problems(within time.Duration) []string {
	var out []string
	add := func(n int, what string) {
		if n != 0 {
			out = append(out, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(r.Lost, "work events lost")
	add(r.Doubled, "events applied twice under two keys")
	add(r.DoubledBeyondKey, "work events counted twice by their execution")
	add(r.TimerMismatch, "timers armed and not fired once")
	add(r.EarlyTimers, fmt.Sprintf("timers fired early (by up to %v)", r.EarliestBy))
	add(r.StuckOutbox, "outbox rows left")
	add(r.StuckTimers, "timers left")
	add(r.StuckMessages, "messages left in the queue")
	add(r.CAS.LostUpdates, "CAS updates lost")
	if r.NotConverged != "" {
		out = append(out, "did not converge: "+r.NotConverged)
	}
	for _, u := range r.UncleanExits {
		out = append(out, "unclean exit: "+u)
	}
	for i, s := range r.Restarts {
		if s.FirstStep > within || s.FirstStep == 0 {
			out = append(out, fmt.Sprintf("restart %d: first step %v after the server was up, want within %v", i+1, s.FirstStep, within))
		}
	}
	return append(out, failoverProblems(r.Failovers, FailoverWithin)...)
}

// Markdown renders the report as the table RELIABILITY.md keeps.
func (r *Report) Markdown() string {
	var b strings.Builder
	p := r.Plan
	fmt.Fprintf(&b, "| what | figure |\n|---|---|\n")
	row := func(k string, v any) { fmt.Fprintf(&b, "| %s | %v |\n", k, v) }
	row("drill", fmt.Sprintf("%d executions, %d worker processes (batched and shared-transaction), %d events/s fed, lease %v",
		p.Executions, p.Workers, p.Rate, p.Visibility))
	if len(r.Failovers) > 0 {
		row("faults", fmt.Sprintf("%d SIGKILLs, %d SIGSTOPs past the lease; on a primary and a synchronous standby: %s (promotion %v after the primary died; partitions %v)",
			r.Kills, r.Stops, kindsOf(r.Failovers), p.Gap, p.Visibility*3/2))
	} else {
		row("faults", fmt.Sprintf("%d SIGKILLs, %d SIGSTOPs past the lease, %d server crashes (down %v each)", r.Kills, r.Stops, len(r.Restarts), p.Down))
	}
	row("work events published (retried publishes)", fmt.Sprintf("%d (%d)", r.Published, r.PublishRetries))
	row("lost", r.Lost)
	row("doubled: two keys for one event / counted twice by the execution", fmt.Sprintf("%d / %d", r.Doubled, r.DoubledBeyondKey))
	row("steps replayed under the same key (absorbed)", r.Replayed)
	row("timers armed / fired / unbalanced / early", fmt.Sprintf("%d / %d / %d / %d", r.TimersArmed, r.TimersFired, r.TimerMismatch, r.EarlyTimers))
	row("left at the end: outbox rows / timers / queued messages", fmt.Sprintf("%d / %d / %d", r.StuckOutbox, r.StuckTimers, r.StuckMessages))
	var firsts, drains []time.Duration
	for i, s := range r.Restarts {
		row(fmt.Sprintf("restart %d: backlog at the crash → first step / backlog applied, after the server was up", i+1),
			fmt.Sprintf("%d → %v / %v", s.Backlog, s.FirstStep.Round(time.Millisecond), s.Drained.Round(time.Millisecond)))
		firsts = append(firsts, s.FirstStep)
		drains = append(drains, s.Drained)
	}
	if len(firsts) > 0 {
		row("worst first step / backlog applied after a restart", fmt.Sprintf("%v / %v",
			slices.Max(firsts).Round(time.Millisecond), slices.Max(drains).Round(time.Millisecond)))
	}
	var ffirst, fdrain []time.Duration
	for i, f := range r.Failovers {
		if f.Kind == "partition" {
			row(fmt.Sprintf("%d: partition: backlog → backlog applied, after the partition began", i+1),
				fmt.Sprintf("%d → %v", f.Backlog, f.Drained.Round(time.Millisecond)))
			continue
		}
		row(fmt.Sprintf("%d: %s: backlog → first step / backlog applied, after the promotion", i+1, f.Kind),
			fmt.Sprintf("%d → %v / %v", f.Backlog, f.FirstStep.Round(time.Millisecond), f.Drained.Round(time.Millisecond)))
		ffirst = append(ffirst, f.FirstStep)
		fdrain = append(fdrain, f.Drained)
	}
	if len(ffirst) > 0 {
		row("worst first step / backlog applied after a promotion", fmt.Sprintf("%v / %v",
			slices.Max(ffirst).Round(time.Millisecond), slices.Max(fdrain).Round(time.Millisecond)))
	}
	if r.CAS.Rounds > 0 {
		row("CAS race", fmt.Sprintf("%d rounds × %d racers over two pools in %v: %d conflicts retried, %d other errors, %d lost updates",
			r.CAS.Rounds, r.CAS.Racers, r.CAS.Took.Round(time.Millisecond), r.CAS.Conflicts, r.CAS.Errors, r.CAS.LostUpdates))
	}
	row("unclean worker exits", len(r.UncleanExits))
	row("drill time", r.Took.Round(time.Second))
	return b.String()
}
