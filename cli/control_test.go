package cli

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
)

func TestControlHelp(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"suspend", "resume", "cancel", "reset", "set-state", "retry", "purge"} {
		code, out, errOut := cli(t, context.Background(), cmd, "--help")
		if code != 0 || !strings.Contains(out, "Usage:") || errOut != "" {
			t.Errorf("stead %s --help: exit %d, stdout %q, stderr %q", cmd, code, out, errOut)
		}
		if !strings.Contains(out, "Exit codes:") {
			t.Errorf("stead %s --help does not document its exit codes", cmd)
		}
	}
}

// TestControlCommandsAndExitCodes drives the operator's commands against orders a worker runs,
// and checks what each prints and the exit code a script sees.
func TestControlCommandsAndExitCodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db := newStore(t, filepath.Join(dir, "ops.db"))
	// The bundled order flow with its payment timer at an hour instead of 5 s: the orders must
	// still be waiting for their payment when the commands reach them, however slow the machine.
	def := filepath.Join(dir, "order.yaml")
	slow := bytes.Replace(chart.SampleOrderFlowYAML(), []byte("after: 5s"), []byte("after: 1h"), 1)
	if err := os.WriteFile(def, slow, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"o1", "o2", "o3", "o4"} {
		if code, _, errOut := cli(t, ctx, "start", "--store", db, "order", "--id", id,
			"--context", `{"order_id":"`+id+`","amount":50,"outcome":"timeout"}`); code != 0 {
			t.Fatalf("start %s: %s", id, errOut)
		}
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan int, 1)
	go func() {
		code, _, _ := cli(t, rctx, "run", "--store", db, "--definition", def, "--log-level", "error", "--trace")
		done <- code
	}()
	defer func() {
		stop()
		if code := <-done; code != 0 {
			t.Errorf("run exited %d", code)
		}
	}()
	status := func(id string) (string, string) {
		t.Helper()
		code, out, _ := cli(t, ctx, "inspect", "--store", db, id, "--json")
		var d struct {
			Execution struct {
				Status     string
				ActivePath string `json:"active_path"`
			}
		}
		if code != 0 || json.Unmarshal([]byte(out), &d) != nil {
			return "", ""
		}
		return d.Execution.Status, d.Execution.ActivePath
	}
	wait := func(id, want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if st, _ := status(id); st == want {
				return
			}
			if time.Now().After(deadline) {
				st, at := status(id)
				t.Fatalf("%s is %s at %s, want %s", id, st, at, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, id := range []string{"o1", "o2", "o3", "o4"} {
		wait(id, "running")
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string // a part of stdout
		err  string // a part of the one line on stderr
	}{
		{"suspend one", []string{"suspend", "o1", "--command-id", "s1"}, 0, "o1  suspended", ""},
		{"suspend it again, same id", []string{"suspend", "o1", "--command-id", "s1"}, 0, "applied before", ""},
		{"suspend it again, new id", []string{"suspend", "o1"}, 3, "refused", "1 of 1 executions refused"},
		{"resume", []string{"resume", "o1"}, 0, "o1  running", ""},
		{"dry run of a batch", []string{"cancel", "--definition-id", "order", "--id-prefix", "o", "--status", "running", "--dry-run"}, 0,
			"cancel (dry run): 4 matched, 4 would apply", ""},
		{"set-state", []string{"set-state", "o2", "--state", "declined"}, 0, "o2  done", ""},
		{"reset", []string{"reset", "o3", "--context", `{"order_id":"o3","amount":7,"outcome":"timeout"}`}, 0, "o3  running", ""},
		{"retry of a running one", []string{"retry", "o4"}, 3, "only a failed execution is retried", "refused"},
		{"batch cancel", []string{"cancel", "--definition-id", "order", "--created-before", "0s", "--status", "running"}, 0,
			"cancel: 3 matched, 3 applied, 0 applied before, 0 refused", ""},
		{"a missing execution among ids", []string{"suspend", "ghost", "o4"}, 3, "ghost  refused", "2 of 2 executions refused"},
		{"a selection that matches nothing", []string{"resume", "--id-prefix", "nobody-"}, 4, "", "no execution matches"},
		{"no selection", []string{"cancel"}, 2, "", "give execution ids"},
		{"ids and a selection", []string{"cancel", "o1", "--status", "running"}, 2, "", "not both"},
		{"set-state without a state", []string{"set-state", "o1"}, 2, "", "--state is required"},
		{"a bad time", []string{"cancel", "--created-before", "yesterday"}, 2, "", "--created-before"},
		{"a bad status", []string{"cancel", "--status", "asleep"}, 2, "", "--status"},
		{"an unknown state", []string{"set-state", "o1", "--state", "nowhere"}, 3, "refused", "refused"},
	} {
		args := append(tc.args, "--store", db)
		if cmd := tc.args[0]; cmd == "reset" || cmd == "set-state" || cmd == "retry" {
			args = append(args, "--definition", def)
		}
		code, out, errOut := cli(t, ctx, args...)
		if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errOut, tc.err) {
			t.Fatalf("%s: exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want %q)", tc.name, code, tc.code, out, tc.out, errOut, tc.err)
		}
		if tc.code != 0 && strings.Count(errOut, "\n") != 1 {
			t.Fatalf("%s: stderr is not one line: %q", tc.name, errOut)
		}
	}
	for _, id := range []string{"o1", "o3", "o4"} {
		wait(id, "cancelled")
	}
	if st, at := status("o2"); st != "done" || at != "declined" {
		t.Fatalf("o2 is %s at %s, want done at declined", st, at)
	}

	// Purge: a tree that has not ended is refused, finished ones go, archived first.
	if code, _, _ := cli(t, ctx, "start", "--store", db, "order", "--id", "o5", "--context", `{"order_id":"o5","amount":5,"outcome":"timeout"}`); code != 0 {
		t.Fatal("start o5")
	}
	wait("o5", "running")
	archive := filepath.Join(t.TempDir(), "archive")
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"a running tree", []string{"purge", "o5"}, 3, "o5  refused"},
		{"a sweep's dry run", []string{"purge", "--older-than", "0s", "--dry-run"}, 0, "4 would purge"},
		{"one tree, archived", []string{"purge", "o2", "--archive", archive}, 0, "o2  purged"},
		{"a sweep", []string{"purge", "--older-than", "0s", "--status", "cancelled"}, 0, "3 purged"},
		{"no cutoff", []string{"purge"}, 2, ""},
		{"two cutoffs", []string{"purge", "--older-than", "1h", "--finished-before", "2026-01-01"}, 2, ""},
		{"a failed sweep", []string{"purge", "--older-than", "1h", "--status", "failed"}, 2, ""},
	} {
		code, out, errOut := cli(t, ctx, append(tc.args, "--store", db)...)
		if code != tc.code || !strings.Contains(out, tc.out) {
			t.Fatalf("%s: exit %d (want %d), stdout %q (want %q), stderr %q", tc.name, code, tc.code, out, tc.out, errOut)
		}
	}
	raw, err := os.ReadFile(filepath.Join(archive, "o2.json"))
	var tree struct {
		Root       string
		Executions []struct{ ID string }
	}
	if err != nil || json.Unmarshal(raw, &tree) != nil || tree.Root != "o2" || len(tree.Executions) != 1 {
		t.Fatalf("archive of o2: %s, %v", raw, err)
	}
	code, out, _ := cli(t, ctx, "inspect", "--store", db, "--roots")
	if code != 0 || !strings.Contains(out, "o5") || strings.Contains(out, "o1 ") || strings.Contains(out, "o2 ") {
		t.Fatalf("after the purges:\n%s", out)
	}
}
