package steadtest_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/steadtest"
	"github.com/steadhq/stead/worker"
)

// approval waits a day for a decision, then escalates; escalation waits another day.
const approval = `
id: approval
initial: waiting
states:
  waiting:
    entry: [notify]
    timeout: {after: 24h, target: escalated}
    on: {approve: approved, reject: rejected}
  escalated:
    entry: [page_manager]
    timeout: {after: 24h, target: expired}
    on: {approve: approved}
  approved: {final: success}
  rejected: {final: failure}
  expired: {final: expired}
`

func noop(chart.ActionContext) (chart.ActionResult, error) { return chart.ActionResult{}, nil }

func approvalKit(t *testing.T) *steadtest.Kit {
	return steadtest.New(t).Action("notify", noop).Action("page_manager", noop).DefineYAML("approval.yaml", approval)
}

func TestDayLongTimerFiresWhenTheClockPassesIt(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		advance time.Duration
		state   string
		status  stead.Status
		paged   int
	}{
		{"just before the day", 24*time.Hour - time.Microsecond, "waiting", stead.StatusRunning, 0},
		{"exactly a day", 24 * time.Hour, "escalated", stead.StatusRunning, 1},
		{"two days at once", 48 * time.Hour, "expired", stead.StatusDone, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := approvalKit(t)
			start := k.Now()
			k.Create("approval", "req-1", nil)
			k.AssertState("req-1", "waiting")
			k.AssertCalls("notify", 1)
			real := time.Now()
			k.Advance(tc.advance)
			if took := time.Since(real); took > 5*time.Second {
				t.Errorf("advancing %v took %v of real time", tc.advance, took)
			}
			if got := k.Now(); !got.Equal(start.Add(tc.advance)) {
				t.Errorf("clock %v, want %v", got, start.Add(tc.advance))
			}
			k.AssertState("req-1", tc.state)
			k.AssertStatus("req-1", tc.status)
			k.AssertCalls("page_manager", tc.paged)
		})
	}
}

func TestTimersFireInOrderAtTheirOwnTimes(t *testing.T) {
	t.Parallel()
	k := approvalKit(t)
	start := k.Now()
	k.Create("approval", "req-1", nil)
	k.Advance(72 * time.Hour)
	steps := k.Trace("req-1")
	var got []string
	for _, st := range steps {
		got = append(got, st.EventKind+"@"+st.At.Sub(start).String()+"->"+st.To)
	}
	want := []string{"stead.start@0s->waiting", "stead.timeout@24h0m0s->escalated", "stead.timeout@48h0m0s->expired"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("steps %v, want %v", got, want)
	}
	if calls := k.Calls("page_manager"); len(calls) != 1 || !calls[0].At.Equal(start.Add(24*time.Hour)) {
		t.Errorf("page_manager calls %+v, want one at +24h", calls)
	}
	if got := k.Path("req-1"); strings.Join(got, ",") != "waiting,escalated,expired" {
		t.Errorf("path %v", got)
	}
}

func TestAnEventBeforeTheTimerWins(t *testing.T) {
	t.Parallel()
	k := approvalKit(t)
	k.Create("approval", "req-1", nil)
	k.Advance(23 * time.Hour)
	k.Send("req-1", "approve", nil)
	k.AssertStatus("req-1", stead.StatusDone)
	k.Advance(48 * time.Hour) // the disarmed timer never fires
	exe := k.Execution("req-1")
	if exe.Outcome != "success" || len(k.Calls("page_manager")) != 0 {
		t.Errorf("outcome %q, page_manager calls %d; want success and none", exe.Outcome, len(k.Calls("page_manager")))
	}
}

func TestWaitAdvancesOnlyAsFarAsNeeded(t *testing.T) {
	t.Parallel()
	k := approvalKit(t)
	start := k.Now()
	k.Create("approval", "req-1", nil)
	exe := k.Expect("req-1", steadtest.InState("escalated"), 7*24*time.Hour)
	if exe.ActivePath != "escalated" || !k.Now().Equal(start.Add(24*time.Hour)) {
		t.Errorf("state %q at %v, want escalated at +24h", exe.ActivePath, k.Now().Sub(start))
	}
}

func TestWaitReportsWhatItSaw(t *testing.T) {
	t.Parallel()
	k := approvalKit(t)
	k.Create("approval", "req-1", nil)
	_, err := k.Wait("req-1", steadtest.Done("success"), 30*time.Hour)
	if err == nil {
		t.Fatal("wait for an approval nobody gives succeeded")
	}
	for _, want := range []string{`"req-1" is not done with outcome success within 30h0m0s`, "running", `"escalated"`, "timers escalated@", "[stead.timeout -> escalated]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := k.Wait("req-1", steadtest.Finished(), -time.Second); !errors.Is(err, stead.ErrInvalid) {
		t.Errorf("negative limit: %v, want ErrInvalid", err)
	}
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// TestCloseStopsTheWorker runs alone (not in parallel) so that the goroutine count is the kit's.
func TestCloseStopsTheWorker(t *testing.T) {
	before := runtime.NumGoroutine()
	k := approvalKit(t)
	k.Create("approval", "req-1", nil)
	k.Advance(time.Hour)
	if runtime.NumGoroutine() <= before {
		t.Fatalf("no worker goroutine while the kit runs")
	}
	k.Close()
	k.Close() // again: harmless
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Close, %d before the kit", n, before)
	}
}

func TestCancelAndVersions(t *testing.T) {
	t.Parallel()
	v2 := strings.Replace(approval, "id: approval", "id: approval\nversion: 2", 1)
	v1 := strings.Replace(approval, "id: approval", "id: approval\nversion: 1", 1)
	k := steadtest.New(t).Action("notify", noop).Action("page_manager", noop).
		DefineYAML("v1.yaml", v1).DefineYAML("v2.yaml", v2)
	if got := k.Create("approval", "new", nil).DefinitionID; got != "approval@2" {
		t.Errorf("an unversioned create starts on %s, want the newest", got)
	}
	if got := k.Create("approval@1", "old", nil).DefinitionID; got != "approval@1" {
		t.Errorf("a versioned create starts on %s", got)
	}
	if k.Engine("approval@1").DefinitionID() != "approval@1" {
		t.Error("Engine returned another version")
	}
	k.Control("old", worker.Command{Op: worker.OpCancel})
	k.Advance(72 * time.Hour)
	k.AssertStatus("old", stead.StatusCancelled)
	k.AssertStatus("new", stead.StatusDone)
	if calls := k.Calls("page_manager"); len(calls) != 1 || calls[0].ExecutionID != "new" {
		t.Errorf("page_manager calls %+v, want only new's", calls)
	}
}
