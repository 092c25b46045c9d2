package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/pgdb/pgdbtest"
)

// TestBulkCommands starts, follows, lists, pauses, resumes and cancels bulk jobs through the CLI
// while "stead run" carries them out, on SQLite and PostgreSQL, and checks the exit codes.
func TestBulkCommands(t *testing.T) {
	t.Parallel()
	stores := []struct {
		name  string
		store func(t *testing.T) []string
	}{
		{"sqlite", func(t *testing.T) []string { return []string{"--store", filepath.Join(t.TempDir(), "bulk.db")} }},
		{"postgres", func(t *testing.T) []string {
			return []string{"--store", pgdbtest.URL(), "--schema", pgdbtest.Schema(t)}
		}},
	}
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			testBulkCommands(t, sc.store(t))
		})
	}
}

func testBulkCommands(t *testing.T, store []string) {
	ctx := context.Background()
	dir := t.TempDir()
	// The order flow waiting an hour for its payment: the orders stay running until the jobs
	// reach them.
	def := filepath.Join(dir, "order.yaml")
	slow := bytes.Replace(chart.SampleOrderFlowYAML(), []byte("after: 5s"), []byte("after: 1h"), 1)
	if err := os.WriteFile(def, slow, 0o600); err != nil {
		t.Fatal(err)
	}
	with := func(args ...string) []string { return append(append([]string{}, args...), store...) }
	startOrders := func(ids ...string) {
		t.Helper()
		for _, id := range ids {
			if code, _, errOut := cli(t, ctx, with("start", "order", "--id", id,
				"--context", `{"order_id":"`+id+`","amount":50,"outcome":"timeout"}`)...); code != 0 {
				t.Fatalf("start %s: %s", id, errOut)
			}
		}
	}
	startOrders("o1", "o2", "o3", "o4", "o5")
	rctx, stop := context.WithCancel(ctx)
	done := make(chan int, 1)
	go func() {
		code, _, _ := cli(t, rctx, with("run", "--definition", def, "--log-level", "error")...)
		done <- code
	}()
	defer func() {
		stop()
		if code := <-done; code != 0 {
			t.Errorf("run exited %d", code)
		}
	}()
	running := func(n string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, out, _ := cli(t, ctx, with("bulk", "start", "--op", "suspend", "--definition-id", "order", "--status", "running", "--dry-run")...)
			if strings.Contains(out, n+" take it") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("orders not running: %s", out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	running("5")

	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"no selection", []string{"bulk", "start", "--op", "cancel"}, exitUsage, ""},
		{"unknown op", []string{"bulk", "start", "--op", "explode", "--definition-id", "order"}, exitUsage, ""},
		{"negative rate", []string{"bulk", "start", "--op", "cancel", "--definition-id", "order", "--rate", "-1"}, exitUsage, ""},
		{"nothing matches", []string{"bulk", "start", "--op", "cancel", "--definition-id", "nothing"}, exitNoTarget, "0 match"},
		{"dry run", []string{"bulk", "start", "--op", "cancel", "--definition-id", "order", "--dry-run"}, exitOK, "cancel: 5 match (5 running), 5 take it"},
		{"no jobs yet", []string{"bulk", "list"}, exitOK, "no bulk jobs"},
		{"unknown job", []string{"bulk", "status", "j-none"}, exitError, ""},
		{"suspend as a job, followed", []string{"bulk", "start", "--op", "suspend", "--definition-id", "order",
			"--status", "running", "--id", "j1", "--rate", "20", "--page", "2", "--wait"}, exitOK, "job j1: suspend done (success), 5 done, 0 refused, 0 remaining"},
		{"status", []string{"bulk", "status", "j1"}, exitOK, "of 5 matched at the start, in 3 pages, at most 20 a second"},
		{"list", []string{"bulk", "list"}, exitOK, "j1"},
		{"cancel of a finished job", []string{"bulk", "cancel", "j1"}, exitError, ""},
		{"resume", []string{"bulk", "start", "--op", "resume", "--definition-id", "order", "--id", "j2", "--wait"},
			exitOK, "job j2: resume done (success), 5 done"},
		{"resume again, refused", []string{"bulk", "start", "--op", "resume", "--definition-id", "order", "--wait"},
			exitRefused, "refused 5: execution is running: only a suspended execution is resumed"},
	}
	for _, tt := range tests {
		code, out, errOut := cli(t, ctx, with(tt.args...)...)
		if code != tt.code || !strings.Contains(out, tt.out) {
			t.Fatalf("%s: stead %s: exit %d (want %d), stdout %q, stderr %q", tt.name, strings.Join(tt.args, " "), code, tt.code, out, errOut)
		}
		if strings.Contains(tt.name, "followed") && !strings.Contains(errOut, "[##############################] 100%") {
			t.Fatalf("%s: no progress bar on stderr: %q", tt.name, errOut)
		}
	}

	// A slow job, paused, resumed and cancelled.
	if code, out, errOut := cli(t, ctx, with("bulk", "start", "--op", "cancel", "--definition-id", "order",
		"--id", "j3", "--rate", "1", "--page", "1")...); code != 0 || !strings.Contains(out, "job j3 started") {
		t.Fatalf("start j3: exit %d, %q %q", code, out, errOut)
	}
	for _, step := range []struct{ cmd, want string }{{"pause", "suspended"}, {"resume", "running"}, {"cancel", "cancel"}} {
		var code int
		var out, errOut string
		deadline := time.Now().Add(20 * time.Second)
		for {
			// A pause before a worker has started the job is refused (pending): try again.
			if code, out, errOut = cli(t, ctx, with("bulk", step.cmd, "j3")...); code == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if code != 0 || !strings.Contains(out, step.want) {
			t.Fatalf("bulk %s j3: exit %d, %q %q", step.cmd, code, out, errOut)
		}
	}
	code, out, errOut := cli(t, ctx, with("bulk", "status", "j3", "--wait")...)
	if code != exitRefused || !strings.Contains(out, "cancelled") || !strings.Contains(errOut, "was cancelled") {
		t.Fatalf("status --wait of a cancelled job: exit %d, %q %q", code, out, errOut)
	}
	code, out, _ = cli(t, ctx, with("bulk", "status", "j3", "--json")...)
	var j struct {
		ID       string
		Status   string
		Progress struct{ Done, Remaining int64 }
	}
	if code != 0 || json.Unmarshal([]byte(out), &j) != nil || j.ID != "j3" || j.Status != "cancelled" || j.Progress.Done >= 5 {
		t.Fatalf("status --json: exit %d, %q", code, out)
	}
	if code, out, _ := cli(t, ctx, with("bulk", "list", "--status", "cancelled")...); code != 0 || !strings.Contains(out, "j3") || strings.Contains(out, "j1") {
		t.Fatalf("list --status cancelled: exit %d, %q", code, out)
	}
}

func TestBulkHelp(t *testing.T) {
	t.Parallel()
	for _, sub := range []string{"", "start", "status", "list", "pause", "resume", "cancel"} {
		args := []string{"bulk", "--help"}
		if sub != "" {
			args = []string{"bulk", sub, "--help"}
		}
		code, out, errOut := cli(t, context.Background(), args...)
		if code != 0 || !strings.Contains(out, "Usage:") || errOut != "" {
			t.Errorf("stead %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out, errOut)
		}
	}
	if _, out, _ := cli(t, context.Background(), "bulk", "--help"); !strings.Contains(out, "Exit codes:") {
		t.Error("stead bulk --help does not document its exit codes")
	}
}
