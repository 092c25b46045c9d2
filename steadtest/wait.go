package steadtest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/steadhq/stead"
)

// Condition is what Wait waits for: a test of an execution, with the words an error uses for it.
type Condition struct {
	desc  string
	match func(*stead.Execution) bool
}

// String describes the condition.
func (c Condition) String() string { return c.desc }

// Match reports whether exe meets the condition.
func (c Condition) Match(exe *stead.Execution) bool { return exe != nil && c.match(exe) }

// Satisfy is a condition of the test's own, described by desc.
func Satisfy(desc string, match func(*stead.Execution) bool) Condition {
	return Condition{desc: desc, match: match}
}

// InState holds while path is active: the active leaf is path or a state inside it.
func InState(path string) Condition {
	return Condition{desc: "in state " + path, match: func(e *stead.Execution) bool { return within(e.ActivePath, path) }}
}

// HasStatus holds while the execution has status s.
func HasStatus(s stead.Status) Condition {
	return Condition{desc: "status " + string(s), match: func(e *stead.Execution) bool { return e.Status == s }}
}

// Finished holds once the execution is done, failed or cancelled.
func Finished() Condition {
	return Condition{desc: "finished", match: func(e *stead.Execution) bool { return e.Status.Finished() }}
}

// Done holds once the execution is done with outcome (any outcome when it is empty).
func Done(outcome string) Condition {
	desc := "done"
	if outcome != "" {
		desc += " with outcome " + outcome
	}
	return Condition{desc: desc, match: func(e *stead.Execution) bool {
		return e.Status == stead.StatusDone && (outcome == "" || e.Outcome == outcome)
	}}
}

// within reports whether the leaf path active is state or lies inside it.
func within(active, state string) bool {
	return active == state || strings.HasPrefix(active, state+".")
}

// Wait lets virtual time pass, at most by limit, until execution id meets cond, and returns it.
// It checks first at the current time; then it moves the clock to each point where something
// falls due, in order, as Advance does, and checks again after each. When cond still does not
// hold at the last such point within limit, the clock stays there and the error says what the
// execution looked like: status, state, version, timers and the states it went through.
func (k *Kit) Wait(id string, cond Condition, limit time.Duration) (*stead.Execution, error) {
	k.tb.Helper()
	k.start()
	if limit < 0 {
		return nil, fmt.Errorf("steadtest: wait for %q: %w: negative limit %v", id, stead.ErrInvalid, limit)
	}
	deadline := k.Now().Add(limit)
	if err := k.settle(); err != nil {
		return nil, fmt.Errorf("steadtest: wait for %q: %w", id, err)
	}
	for {
		exe, err := k.store.Load(k.ctx(), id)
		if err != nil {
			return nil, fmt.Errorf("steadtest: wait for %q: %w", id, err)
		}
		if cond.Match(exe) {
			return exe, nil
		}
		next, ok, err := k.nextDue(deadline)
		if err != nil {
			return nil, fmt.Errorf("steadtest: wait for %q: %w", id, err)
		}
		if !ok {
			return exe, fmt.Errorf("steadtest: execution %q is not %s within %v: %s", id, cond, limit, k.describe(exe))
		}
		if err := k.stepTo(next); err != nil {
			return nil, fmt.Errorf("steadtest: wait for %q: %w", id, err)
		}
	}
}

// Expect is Wait that fails the test when cond does not hold within limit.
func (k *Kit) Expect(id string, cond Condition, limit time.Duration) *stead.Execution {
	k.tb.Helper()
	exe, err := k.Wait(id, cond, limit)
	if err != nil {
		k.tb.Fatal(err)
	}
	return exe
}

// describe says what an execution looks like, for a failed wait or assertion.
func (k *Kit) describe(exe *stead.Execution) string {
	var b strings.Builder
	fmt.Fprintf(&b, "at %s it is %s", k.Now().Format(time.RFC3339), exe.Status)
	if exe.Outcome != "" {
		fmt.Fprintf(&b, " (outcome %s)", exe.Outcome)
	}
	fmt.Fprintf(&b, " in state %q at version %d", exe.ActivePath, exe.Version)
	if exe.Error != "" {
		fmt.Fprintf(&b, ", error %q", exe.Error)
	}
	if len(exe.Timers) > 0 {
		b.WriteString(", timers")
		for _, p := range slices.Sorted(maps.Keys(exe.Timers)) {
			fmt.Fprintf(&b, " %s@%s", p, exe.Timers[p].Format(time.RFC3339))
		}
	} else {
		b.WriteString(", no timer armed")
	}
	if steps, err := k.store.ReadTrace(k.ctx(), exe.ID); err == nil && len(steps) > 0 {
		b.WriteString("; went")
		for _, st := range steps {
			fmt.Fprintf(&b, " [%s -> %s]", st.EventKind, or(st.To, "-"))
		}
	}
	return b.String()
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
