package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunAppliesDeclaredSchedules: `stead run` creates the schedules a definition declares in its
// YAML and fires them; a second run with a changed declaration updates the schedule.
func TestRunAppliesDeclaredSchedules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db := newStore(t, filepath.Join(dir, "s.db"))
	def := filepath.Join(dir, "sweep.yaml")
	write := func(every string) {
		t.Helper()
		yaml := "id: sweep\ninitial: idle\nstates:\n  idle: {on: {go: done}}\n  done: {final: success}\n" +
			"schedules:\n  sweeper: {every: " + every + ", overlap: allow_all, context: {region: eu}}\n"
		if err := os.WriteFile(def, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	show := func() scheduleJSON {
		t.Helper()
		code, out, errOut := cli(t, ctx, "schedule", "show", "--store", db, "sweeper", "--json")
		var sc scheduleJSON
		if code != 0 || json.Unmarshal([]byte(out), &sc) != nil {
			t.Fatalf("schedule show: exit %d: %s", code, errOut)
		}
		return sc
	}
	run := func(until func() bool) {
		t.Helper()
		rctx, stop := context.WithCancel(ctx)
		done := make(chan int, 1)
		go func() {
			code, _, _ := cli(t, rctx, "run", "--store", db, "--definition", def, "--log-level", "error")
			done <- code
		}()
		deadline := time.Now().Add(30 * time.Second)
		for !until() && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		stop()
		if code := <-done; code != 0 {
			t.Fatalf("run exited %d", code)
		}
	}
	write("1s")
	var fired scheduleJSON
	run(func() bool {
		code, out, _ := cli(t, ctx, "schedule", "show", "--store", db, "sweeper", "--json")
		return code == 0 && json.Unmarshal([]byte(out), &fired) == nil && fired.LastExecutionID != ""
	})
	if fired.LastExecutionID == "" {
		t.Fatal("stead run fired no declared tick in 30s")
	}
	if fired.Every != "1s" || fired.Overlap != "allow_all" {
		t.Fatalf("declared schedule stored as %+v", fired)
	}
	if code, out, _ := cli(t, ctx, "inspect", "--store", db, fired.LastExecutionID); code != 0 || !strings.Contains(out, "sweep") {
		t.Fatalf("inspect the fired execution: %d\n%s", code, out)
	}
	write("2s")
	run(func() bool { return show().Every == "2s" })
	if sc := show(); sc.Every != "2s" {
		t.Fatalf("after a changed declaration every = %s, want 2s", sc.Every)
	}
}
