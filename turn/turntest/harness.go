package turntest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/steadhq/stead/turn"
)

// Factory returns a set of stores for one check. The suite calls it once per check; it may
// return fresh, empty stores each time or the same shared ones (see the package documentation).
type Factory func(ctx context.Context) (turn.Stores, error)

// CheckCount is the number of checks the suite runs.
const CheckCount = 27

// Check is one rule of the contract.
type Check struct {
	// Name is the check's stable name, also its subtest name.
	Name string
	run  func(c *C)
}

// Checks returns every check, in run order.
func Checks() []Check { return checks() }

// Lookup returns the check with this name.
func Lookup(name string) (Check, bool) {
	for _, ch := range checks() {
		if ch.Name == name {
			return ch, true
		}
	}
	return Check{}, false
}

// Outcome is the result of one check.
type Outcome struct {
	Check string
	// Failure says what went wrong, with the check's file and line; empty when the check passed.
	Failure string
}

// Passed reports whether the check passed.
func (o Outcome) Passed() bool { return o.Failure == "" }

// Report is the result of a run, one Outcome per check in run order.
type Report struct {
	Outcomes []Outcome
}

// Passed reports whether every check passed (and at least one ran).
func (r Report) Passed() bool { return len(r.Outcomes) > 0 && len(r.Failures()) == 0 }

// Failures returns the failed outcomes.
func (r Report) Failures() []Outcome {
	var out []Outcome
	for _, o := range r.Outcomes {
		if !o.Passed() {
			out = append(out, o)
		}
	}
	return out
}

// Err returns nil when the report passed, else an error naming the first failure.
func (r Report) Err() error {
	if len(r.Outcomes) == 0 {
		return errors.New("turntest: no check ran")
	}
	if f := r.Failures(); len(f) > 0 {
		return fmt.Errorf("turntest: %d of %d checks failed, first %s: %s", len(f), len(r.Outcomes), f[0].Check, f[0].Failure)
	}
	return nil
}

// String renders "N of M conformance checks passed" and one line per check.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d conformance checks passed\n", len(r.Outcomes)-len(r.Failures()), len(r.Outcomes))
	for _, o := range r.Outcomes {
		if o.Passed() {
			fmt.Fprintf(&b, "pass %s\n", o.Check)
		} else {
			fmt.Fprintf(&b, "FAIL %s: %s\n", o.Check, o.Failure)
		}
	}
	return b.String()
}

// RunAll runs every check, each on stores from f, and reports them all.
func RunAll(ctx context.Context, f Factory) Report {
	var r Report
	for _, ch := range checks() {
		r.Outcomes = append(r.Outcomes, ch.Run(ctx, f))
	}
	return r
}

// Run runs the check on stores from f. It never panics: a panic in the backend is a failure.
func (ch Check) Run(ctx context.Context, f Factory) (out Outcome) {
	out.Check = ch.Name
	c := &C{ctx: ctx, name: ch.Name}
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(abort); !ok {
				c.failure = fmt.Sprintf("panic: %v", p)
			}
		}
		out.Failure = c.failure
	}()
	stores, err := f(ctx)
	if err != nil {
		c.failure = "factory: " + err.Error()
		return out
	}
	if err := stores.Check(); err != nil {
		c.failure = "factory: " + err.Error()
		return out
	}
	c.init(stores)
	ch.run(c)
	return out
}

// Option configures Run.
type Option func(*options)

type options struct{ parallel bool }

// Parallel runs the checks as parallel subtests. Use it when the factory returns fresh stores,
// or shared stores where no other outbox consumer runs (the outbox checks claim every due row).
func Parallel() Option { return func(o *options) { o.parallel = true } }

// Run runs every check as a subtest of t named after it.
func Run(t *testing.T, f Factory, opts ...Option) {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	for _, ch := range checks() {
		t.Run(ch.Name, func(t *testing.T) {
			if o.parallel {
				t.Parallel()
			}
			if out := ch.Run(t.Context(), f); !out.Passed() {
				t.Fatal(out.Failure)
			}
		})
	}
}

// C is the state of one running check: its stores, its own accounts and ids, and its failure.
type C struct {
	ctx     context.Context
	name    string
	failure string
	s       turn.Stores

	a, b        string // the two accounts
	destination string // the outbox destination of this check
	conv        turn.ID
	turnID      turn.ID
}

type abort struct{}

func (c *C) init(s turn.Stores) {
	var raw [6]byte
	_, _ = rand.Read(raw[:])
	suffix := hex.EncodeToString(raw[:])
	c.s = s
	c.a = "conformance-account-" + suffix
	c.b = "conformance-other-account-" + suffix
	c.destination = "conformance-destination-" + suffix
	c.conv = turn.NewID()
	c.turnID = turn.NewID()
}

// fatalf records the failure with the location of the check line that found it and stops the
// check.
func (c *C) fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if loc := checkLine(); loc != "" {
		msg = loc + ": " + msg
	}
	c.failure = msg
	panic(abort{})
}

// checkLine returns file:line of the innermost frame outside the suite's helpers.
func checkLine() string {
	pcs := make([]uintptr, 16)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		fr, more := frames.Next()
		file := fr.File
		if i := strings.LastIndexByte(file, '/'); i >= 0 {
			file = file[i+1:]
		}
		if file != "fixtures.go" && file != "harness.go" {
			return fmt.Sprintf("%s:%d", file, fr.Line)
		}
		if !more {
			return ""
		}
	}
}
