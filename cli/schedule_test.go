package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
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
