package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestScheduleCommands drives `stead schedule` and checks that `stead run` fires the schedule.
func TestScheduleCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := newStore(t, filepath.Join(t.TempDir(), "s.db"))
	ok := func(args ...string) string {
		t.Helper()
		code, out, errOut := cli(t, ctx, args...)
		if code != 0 {
			t.Fatalf("stead %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
		return out
	}
	show := func(id string) scheduleJSON {
		t.Helper()
		var sc scheduleJSON
		if err := json.Unmarshal([]byte(ok("schedule", "show", "--store", db, id, "--json")), &sc); err != nil {
			t.Fatal(err)
		}
		return sc
	}
	ok("schedule", "create", "--store", db, "tick", "order", "--every", "1s", "--overlap", "allow_all",
		"--context", `{"order_id":"o","amount":50,"outcome":"timeout"}`)
	if sc := show("tick"); sc.Every != "1s" || sc.Overlap != "allow_all" || sc.CatchUp != "latest" || sc.Paused {
		t.Fatalf("show: %+v", sc)
	}

	rctx, stop := context.WithCancel(ctx)
	done := make(chan int, 1)
	go func() {
		code, _, _ := cli(t, rctx, "run", "--store", db, "--log-level", "error")
		done <- code
	}()
	deadline := time.Now().Add(30 * time.Second)
	var fired scheduleJSON
	for fired = show("tick"); fired.LastExecutionID == "" && time.Now().Before(deadline); fired = show("tick") {
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("run exited %d", code)
	}
	if fired.LastExecutionID == "" || fired.LastTick == nil {
		t.Fatal("stead run fired no tick in 30s")
	}
	if want := "tick@" + fired.LastTick.UTC().Format(time.RFC3339Nano); fired.LastExecutionID != want {
		t.Fatalf("last execution %q, want %q", fired.LastExecutionID, want)
	}
	if out := ok("inspect", "--store", db, fired.LastExecutionID); !strings.Contains(out, "order") {
		t.Fatalf("inspect the fired execution:\n%s", out)
	}

	if out := ok("schedule", "list", "--store", db); !strings.Contains(out, "tick") || !strings.Contains(out, "every 1s") {
		t.Fatalf("list:\n%s", out)
	}
	if out := ok("schedule", "pause", "--store", db, "tick"); !strings.Contains(out, "paused") {
		t.Fatalf("pause:\n%s", out)
	}
	if !show("tick").Paused {
		t.Fatal("not paused")
	}
	ok("schedule", "resume", "--store", db, "tick")
	if show("tick").Paused {
		t.Fatal("still paused")
	}
	if out := ok("schedule", "trigger", "--store", db, "tick"); !strings.HasPrefix(out, "tick@manual-") {
		t.Fatalf("trigger: %q", out)
	}
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	args := []string{"schedule", "backfill", "--store", db, "tick", "--from", from.Format(time.RFC3339), "--to", from.Add(3 * time.Second).Format(time.RFC3339)}
	if out := ok(args...); strings.Count(out, "\n") != 3 || !strings.Contains(out, "tick@2026-01-01T00:00:02Z") {
		t.Fatalf("backfill:\n%s", out)
	}
	if out := ok(args...); out != "" {
		t.Fatalf("backfill again started %q", out)
	}
	ok("schedule", "delete", "--store", db, "tick")
	if code, _, errOut := cli(t, ctx, "schedule", "show", "--store", db, "tick"); code != 1 || !strings.Contains(errOut, "not found") {
		t.Fatalf("show after delete: %d %q", code, errOut)
	}
}

func TestScheduleBadInput(t *testing.T) {
	t.Parallel()
	db := newStore(t, filepath.Join(t.TempDir(), "s.db"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cron", "61 * * * *"}, "cron expression"},
		{[]string{"--cron", "* * * * *", "--tz", "Mars/Olympus"}, "unknown time zone"},
		{[]string{"--cron", "* * * * *", "--every", "1m"}, "both"},
		{[]string{}, "neither"},
		{[]string{"--every", "1m", "--overlap", "sometimes"}, "overlap"},
		{[]string{"--every", "1m", "--context", "[1]"}, "not a JSON object"},
	} {
		args := append([]string{"schedule", "create", "--store", db, "s", "order"}, tc.args...)
		code, _, errOut := cli(t, context.Background(), args...)
		if code != 1 || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q (want %q)", tc.args, code, errOut, tc.want)
		}
	}
	if _, out, _ := cli(t, context.Background(), "schedule", "list", "--store", db); strings.Count(out, "\n") != 1 {
		t.Fatalf("a refused create wrote:\n%s", out)
	}
	code, _, errOut := cli(t, context.Background(), "schedule", "backfill", "--store", db, "s", "--from", "yesterday", "--to", "now")
	if code != 2 || !strings.Contains(errOut, "--from") {
		t.Fatalf("backfill with bad times: %d %q", code, errOut)
	}
}

// TestScheduleUpdate: update changes the fields its flags name, keeps the others, and refuses
// invalid values and unknown ids without writing.
func TestScheduleUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := newStore(t, filepath.Join(t.TempDir(), "s.db"))
	ok := func(args ...string) string {
		t.Helper()
		code, out, errOut := cli(t, ctx, args...)
		if code != 0 {
			t.Fatalf("stead %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
		return out
	}
	show := func() scheduleJSON {
		t.Helper()
		var sc scheduleJSON
		if err := json.Unmarshal([]byte(ok("schedule", "show", "--store", db, "s", "--json")), &sc); err != nil {
			t.Fatal(err)
		}
		return sc
	}
	update := func(args ...string) scheduleJSON {
		t.Helper()
		var sc scheduleJSON
		out := ok(append([]string{"schedule", "update", "--store", db, "s", "--json"}, args...)...)
		if err := json.Unmarshal([]byte(out), &sc); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		if got := show(); !reflect.DeepEqual(got, sc) {
			t.Fatalf("update printed %+v, show says %+v", sc, got)
		}
		return sc
	}
	ok("schedule", "create", "--store", db, "s", "order", "--every", "1m", "--context", `{"a":1}`)
	prev := show()
	step := func(args []string, check func(before, after scheduleJSON) bool) {
		t.Helper()
		got := update(args...)
		if got.Version != prev.Version+1 || !check(prev, got) {
			t.Fatalf("update %v:\nbefore %+v\nafter  %+v", args, prev, got)
		}
		prev = got
	}
	// Everything but the fields named, and the store's own (version, next tick).
	same := func(a, b scheduleJSON, except ...string) bool {
		a.Version, b.Version, a.NextTick, b.NextTick = 0, 0, time.Time{}, time.Time{}
		for _, f := range except {
			switch f {
			case "timing":
				a.Cron, a.TimeZone, a.Every, b.Cron, b.TimeZone, b.Every = "", "", "", "", "", ""
			case "tz":
				a.TimeZone, b.TimeZone = "", ""
			case "definition":
				a.DefinitionID, b.DefinitionID = "", ""
			case "context":
				a.Context, b.Context = nil, nil
			case "jitter":
				a.Jitter, b.Jitter = "", ""
			case "overlap":
				a.Overlap, b.Overlap = "", ""
			case "catch-up":
				a.CatchUp, a.CatchUpWindow, b.CatchUp, b.CatchUpWindow = "", "", "", ""
			}
		}
		return reflect.DeepEqual(a, b)
	}
	step([]string{"--cron", "0 9 * * MON-FRI", "--tz", "Europe/Paris"}, func(b, a scheduleJSON) bool {
		return a.Cron == "0 9 * * MON-FRI" && a.TimeZone == "Europe/Paris" && a.Every == "" &&
			a.NextTick.In(mustZone(t, "Europe/Paris")).Hour() == 9 && same(b, a, "timing")
	})
	step([]string{"--tz", "America/New_York"}, func(b, a scheduleJSON) bool {
		return a.Cron == b.Cron && a.TimeZone == "America/New_York" && a.NextTick.In(mustZone(t, "America/New_York")).Hour() == 9 &&
			same(b, a, "tz")
	})
	step([]string{"--cron", "*/5 * * * *"}, func(b, a scheduleJSON) bool {
		return a.Cron == "*/5 * * * *" && a.TimeZone == "America/New_York" && a.NextTick.Minute()%5 == 0 && same(b, a, "timing")
	})
	step([]string{"--every", "30s"}, func(b, a scheduleJSON) bool {
		return a.Every == "30s" && a.Cron == "" && a.TimeZone == "" && a.NextTick.Second()%30 == 0 && same(b, a, "timing")
	})
	step([]string{"--jitter", "5s"}, func(b, a scheduleJSON) bool {
		return a.Jitter == "5s" && a.NextTick.Equal(b.NextTick) && same(b, a, "jitter")
	})
	step([]string{"--overlap", "buffer_one"}, func(b, a scheduleJSON) bool { return a.Overlap == "buffer_one" && same(b, a, "overlap") })
	step([]string{"--catch-up", "all", "--catch-up-window", "10m"}, func(b, a scheduleJSON) bool {
		return a.CatchUp == "all" && a.CatchUpWindow == "10m0s" && same(b, a, "catch-up")
	})
	step([]string{"--context", `{"b":2}`}, func(b, a scheduleJSON) bool { return compact(t, a.Context) == `{"b":2}` && same(b, a, "context") })
	step([]string{"--context", ""}, func(b, a scheduleJSON) bool { return a.Context == nil && same(b, a, "context") })
	step([]string{"--definition-id", "report"}, func(b, a scheduleJSON) bool { return a.DefinitionID == "report" && same(b, a, "definition") })
	ok("schedule", "pause", "--store", db, "s")
	prev = show()
	step([]string{"--jitter", "0s"}, func(b, a scheduleJSON) bool { return a.Jitter == "" && a.Paused && same(b, a, "jitter") })
	if out := ok("schedule", "update", "--store", db, "s", "--overlap", "skip"); !strings.Contains(out, "paused") || !strings.Contains(out, "every 30s") {
		t.Fatalf("update prints the schedule as list does:\n%s", out)
	}
	prev = show()

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cron", "61 * * * *"}, "cron expression"},
		{[]string{"--cron", "* * * * *", "--tz", "Mars/Olympus"}, "unknown time zone"},
		{[]string{"--tz", "Europe/Paris"}, "time zone applies to a cron expression"},
		{[]string{"--cron", "* * * * *", "--every", "1m"}, "both"},
		{[]string{"--every", "1ms"}, "interval"},
		{[]string{"--jitter", "1m"}, "jitter"},
		{[]string{"--overlap", "sometimes"}, "overlap"},
		{[]string{"--catch-up", "most"}, "catch-up"},
		{[]string{"--context", "[1]"}, "not a JSON object"},
		{[]string{"--definition-id", ""}, "definition id is empty"},
	} {
		args := append([]string{"schedule", "update", "--store", db, "s"}, tc.args...)
		code, _, errOut := cli(t, ctx, args...)
		if code != 1 || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q (want %q)", tc.args, code, errOut, tc.want)
		}
		if got := show(); !reflect.DeepEqual(got, prev) {
			t.Fatalf("%v was refused but wrote:\nbefore %+v\nafter  %+v", tc.args, prev, got)
		}
	}
	code, _, errOut := cli(t, ctx, "schedule", "update", "--store", db, "nope", "--every", "1m")
	if code != 1 || !strings.Contains(errOut, "not found") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("update of an unknown schedule: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = cli(t, ctx, "schedule", "update", "--store", db, "s")
	if code != 2 || !strings.Contains(errOut, "nothing to change") {
		t.Errorf("update without a flag: exit %d, stderr %q", code, errOut)
	}
	if got := show(); !reflect.DeepEqual(got, prev) {
		t.Fatalf("refused updates wrote:\nbefore %+v\nafter  %+v", prev, got)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
