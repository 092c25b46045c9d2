package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/steadhq/stead/pgdb/pgdbtest"
)

// cli runs the CLI in-process and returns its exit code, stdout and stderr.
func cli(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(ctx, testConfig(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestHelpEverywhere(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"", "run", "start", "send", "migrate", "inspect", "diagram", "serve", "defs"} {
		args := []string{"--help"}
		if cmd != "" {
			args = []string{cmd, "--help"}
		}
		code, out, errOut := cli(t, context.Background(), args...)
		if code != 0 || !strings.Contains(out, "Usage:") || errOut != "" {
			t.Errorf("stead %s --help: exit %d, stdout %q, stderr %q", cmd, code, out, errOut)
		}
	}
}

// TestErrorsAreOneLine checks that every failure is one line on stderr and a non-zero exit.
func TestErrorsAreOneLine(t *testing.T) {
	t.Parallel()
	db := newStore(t, filepath.Join(t.TempDir(), "s.db"))
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown command", []string{"frobnicate"}, 1, "unknown command"},
		{"unknown flag", []string{"run", "--nope"}, 2, "unknown flag"},
		{"missing store", []string{"inspect"}, 2, "--store is required"},
		{"too many args", []string{"inspect", "--store", db, "a", "b"}, 2, "at most one"},
		{"missing execution", []string{"inspect", "--store", db, "ghost"}, 1, "not found"},
		{"send to missing", []string{"send", "--store", db, "ghost", "tick"}, 1, "not found"},
		// On PostgreSQL the publish itself checks that the execution exists.
		{"send to missing on postgres", []string{"send", "--store", pgdbtest.URL(), "--schema", pgdbtest.Schema(t), "ghost", "tick"}, 1, "not found"},
		{"bad context", []string{"start", "--store", db, "order", "--context", "[1]"}, 1, "not a JSON object"},
		{"bad definition file", []string{"diagram", "--definition", filepath.Join(t.TempDir(), "nope.yaml")}, 1, "nope.yaml"},
		{"bad status", []string{"inspect", "--store", db, "--status", "sleeping"}, 2, "--status"},
		{"bad log level", []string{"run", "--store", db, "--log-level", "loud"}, 2, "--log-level"},
		{"priority share over 1", []string{"run", "--store", db, "--priority-share", "1.5"}, 2, "--priority-share"},
		{"trace sample over 1", []string{"run", "--store", db, "--trace-sample", "1.5"}, 2, "--trace-sample 1.5: want a ratio from 0 to 1"},
		{"trace sample below 0", []string{"run", "--store", db, "--trace-sample=-0.1"}, 2, "--trace-sample -0.1: want a ratio"},
		{"trace sample NaN", []string{"run", "--store", db, "--trace-sample", "NaN"}, 2, "--trace-sample NaN: want a ratio"},
		{"trace sample not a number", []string{"run", "--store", db, "--trace-sample", "half"}, 2, "--trace-sample"},
		{"priority threshold 0", []string{"run", "--store", db, "--priority-threshold", "0"}, 2, "--priority-threshold"},
		{"schema on sqlite", []string{"migrate", "--store", db, "--schema", "x"}, 1, "PostgreSQL only"},
		{"unsafe schema", []string{"migrate", "--store", pgdbtest.URL(), "--schema", "x; drop"}, 1, "invalid"},
	} {
		code, out, errOut := cli(t, context.Background(), tc.args...)
		lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
		// One line, and the program's prefix once: the library's stacked ones are dropped.
		if code != tc.code || len(lines) != 1 || !strings.HasPrefix(errOut, "stead: ") || !strings.Contains(errOut, tc.want) ||
			strings.Count(errOut, "stead: ") != 1 || strings.Contains(errOut, "chart: ") {
			t.Errorf("%s: exit %d (want %d), stderr %q (want one line with %q), stdout %q", tc.name, code, tc.code, errOut, tc.want, out)
		}
	}
}

// TestStartSendRunInspect walks the sender side and a worker through the CLI on SQLite.
func TestStartSendRunInspect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := newStore(t, filepath.Join(t.TempDir(), "s.db"))
	if code, out, errOut := cli(t, ctx, "migrate", "--store", db); code != 0 || !strings.Contains(out, "schema up to date") {
		t.Fatalf("migrate: %d %q %q", code, out, errOut)
	}
	code, out, errOut := cli(t, ctx, "start", "--store", db, "order", "--id", "o1",
		"--context", `{"order_id":"o1","amount":50,"outcome":"timeout"}`)
	if code != 0 || strings.TrimSpace(out) != "o1" {
		t.Fatalf("start: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := cli(t, ctx, "start", "--store", db, "order", "--id", "o1"); code == 0 || !strings.Contains(errOut, "already exists") {
		t.Fatalf("start twice: %d %q", code, errOut)
	}
	// A worker runs until the order waits for its payment, and is stopped the way SIGTERM
	// stops it: its context ends.
	runUntil(t, testConfig(), db, "o1", "running")
	code, out, _ = cli(t, ctx, "inspect", "--store", db, "o1")
	if code != 0 || !strings.Contains(out, "awaiting_payment") || !strings.Contains(out, "timers (1)") {
		t.Fatalf("inspect after start: %d\n%s", code, out)
	}
	code, out, errOut = cli(t, ctx, "send", "--store", db, "o1", "cancel_order", "--event-id", "cancel-1")
	if code != 0 || strings.TrimSpace(out) != "cancel-1" {
		t.Fatalf("send: %d %q %q", code, out, errOut)
	}
	runUntil(t, testConfig(), db, "o1", "done/cancelled")
	code, out, _ = cli(t, ctx, "inspect", "--store", db, "o1", "--json")
	var d struct {
		Execution struct {
			Status, Outcome string
		}
		Timers []any `json:"timers"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || d.Execution.Status != "done" || d.Execution.Outcome != "cancelled" || len(d.Timers) != 0 {
		t.Fatalf("inspect --json after cancel: %d %+v\n%s", code, d, out)
	}
	code, out, _ = cli(t, ctx, "inspect", "--store", db, "--status", "done", "--roots")
	if code != 0 || !strings.Contains(out, "o1") || !strings.Contains(out, "cancelled") {
		t.Fatalf("inspect list: %d\n%s", code, out)
	}
	code, out, _ = cli(t, ctx, "diagram", "--store", db, "--execution", "o1")
	if code != 0 || !strings.HasPrefix(out, "stateDiagram-v2") || !strings.Contains(out, "class ") {
		t.Fatalf("diagram of an execution: %d\n%s", code, out)
	}
}

func TestMigratePostgres(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.Schema(t)
	code, out, errOut := cli(t, context.Background(), "migrate", "--store", pgdbtest.URL(), "--schema", schema)
	if code != 0 || !strings.Contains(out, "postgres") {
		t.Fatalf("migrate: %d %q %q", code, out, errOut)
	}
}
