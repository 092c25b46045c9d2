package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// cliWith runs the command tree of cfg in-process and returns its exit code, stdout and stderr.
func cliWith(t *testing.T, ctx context.Context, cfg Config, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(ctx, cfg, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// runUntil runs `run` of cfg on db until the execution id has the status want (see status),
// then stops it the way SIGTERM does; it fails the test after 30 s.
func runUntil(t *testing.T, cfg Config, db, id, want string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan string, 1)
	go func() {
		var out, errOut bytes.Buffer
		// A worker stopped mid-step may report the cancellation itself (a statement prepared
		// under the cancelled context): that is the stop this test asked for, not a failure.
		code := Run(ctx, cfg, []string{"run", "--store", db, "--log-level", "error"}, &out, &errOut)
		if code != 0 && !(ctx.Err() != nil && strings.Contains(errOut.String(), "context canceled")) {
			done <- fmt.Sprintf("run: exit %d: %s", code, errOut.String())
			return
		}
		done <- ""
	}()
	deadline := time.Now().Add(30 * time.Second)
	got := status(t, db, id)
	for ; got != want && time.Now().Before(deadline); got = status(t, db, id) {
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if msg := <-done; msg != "" {
		t.Fatal(msg)
	}
	if got != want {
		_, o, _ := cli(t, t.Context(), "inspect", "--store", db, id)
		t.Fatalf("%s is %s after 30 s of workers, want %s\n%s", id, got, want, o)
	}
}

// status reads an execution's status and outcome with inspect --json.
func status(t *testing.T, db, id string) string {
	t.Helper()
	code, out, errOut := cli(t, t.Context(), "inspect", "--store", db, id, "--json")
	var d struct {
		Execution struct{ Status, Outcome string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil {
		t.Fatalf("inspect %s: exit %d: %s", id, code, errOut)
	}
	if d.Execution.Outcome != "" {
		return d.Execution.Status + "/" + d.Execution.Outcome
	}
	return d.Execution.Status
}

const missingAction = `action "open_ticket" is not registered in this binary: build your own stead with cli.Main`

// TestOwnActions is a user's flow operated from the stock binary and from the user's own: the
// stock one reads, draws, lists and sends to it, and refuses plainly whatever runs its actions;
// the user's own, built with cli.Config, runs, retries and finishes it.
func TestOwnActions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var failOpen atomic.Bool
	own := approvalConfig(t, &failOpen)
	db := newStore(t, t.TempDir()+"/own.db")
	file := []string{"--definition", approvalFile}

	must := func(code int, out, errOut string) string {
		t.Helper()
		if code != 0 {
			t.Fatalf("exit %d: %s %s", code, out, errOut)
		}
		return out
	}
	refused := func(what string, wantCode int, wantText string, code int, out, errOut string) {
		t.Helper()
		if code != wantCode || !strings.Contains(out+errOut, wantText) {
			t.Errorf("%s: exit %d (want %d), stdout %q, stderr %q: want %q", what, code, wantCode, out, errOut, wantText)
		}
	}

	// The stock binary refuses to run or check what needs open_ticket, before opening the store.
	code, out, errOut := cli(t, ctx, append([]string{"run", "--store", db}, file...)...)
	refused("stock run", 1, missingAction, code, out, errOut)
	code, out, errOut = cli(t, ctx, append([]string{"start", "--store", db, "approval", "--id", "a0", "--context", `{"amount":5}`}, file...)...)
	refused("stock start --definition", 1, missingAction, code, out, errOut)

	// Started by the user's binary (its definition is compiled in), and by the stock one unchecked.
	must(cliWith(t, ctx, own, "start", "--store", db, "approval", "--id", "a1", "--context", `{"amount":5}`))
	code, out, errOut = cli(t, ctx, "start", "--store", db, "approval", "--id", "a2", "--context", `{"amount":7}`)
	if code != 0 || !strings.Contains(errOut, `note: definition "approval" is not compiled into this binary`) {
		t.Errorf("stock start without the file: exit %d, stdout %q, stderr %q: want 0 and a note", code, out, errOut)
	}
	code, out, errOut = cliWith(t, ctx, own, "start", "--store", db, "approval", "--id", "a3", "--context", `{}`)
	refused("own start without the required amount", 1, "amount", code, out, errOut)
	runUntil(t, own, db, "a1", "running")

	// The stock binary lists, draws and sends, checking the kind against the file.
	if out := must(cli(t, ctx, "inspect", "--store", db, "--definition-id", "approval")); !strings.Contains(out, "a1") || !strings.Contains(out, "a2") {
		t.Errorf("inspect --definition-id approval:\n%s", out)
	}
	if out := must(cli(t, ctx, append([]string{"diagram", "--store", db, "--execution", "a1"}, file...)...)); !strings.Contains(out, "waiting") {
		t.Errorf("diagram:\n%s", out)
	}
	code, out, errOut = cli(t, ctx, append([]string{"send", "--store", db, "a1", "aproved"}, file...)...)
	refused("a misspelled kind", 1, `definition "approval" handles no event "aproved"`, code, out, errOut)

	// Without the file, the stock binary sends unchecked, and says so.
	code, out, errOut = cli(t, ctx, "send", "--store", db, "a2", "rejected")
	if code != 0 || !strings.Contains(errOut, `note: definition "approval" was not read`) {
		t.Errorf("send without the definition: exit %d, stdout %q, stderr %q: want 0 and a note", code, out, errOut)
	}

	// open_ticket fails: a1 fails on approved.
	failOpen.Store(true)
	must(cli(t, ctx, append([]string{"send", "--store", db, "a1", "approved"}, file...)...))
	runUntil(t, own, db, "a1", "failed")

	// Retry runs open_ticket: the stock binary says it cannot, the dry run as the real one.
	for _, dry := range []bool{true, false} {
		args := append([]string{"retry", "--store", db, "a1"}, file...)
		if dry {
			args = append(args, "--dry-run")
		}
		code, out, errOut = cli(t, ctx, args...)
		refused("stock retry", exitRefused, missingAction, code, out, errOut)
	}
	code, out, errOut = cli(t, ctx, "retry", "--store", db, "a1")
	refused("stock retry without the file", exitRefused, `definition "approval" is not loaded: give its file with --definition`, code, out, errOut)
	code, out, errOut = cli(t, ctx, append([]string{"retry", "--store", db, "--definition-id", "approval", "--status", "failed"}, file...)...)
	refused("stock retry of a selection", 1, missingAction, code, out, errOut)
	for _, op := range [][]string{{"reset"}, {"set-state", "--state", "waiting"}} {
		code, out, errOut = cli(t, ctx, append(append([]string{op[0], "--store", db, "a1"}, op[1:]...), file...)...)
		refused("stock "+op[0], exitRefused, missingAction, code, out, errOut)
	}
	if got := status(t, db, "a1"); got != "failed" {
		t.Fatalf("a1 after the refused commands: %s", got)
	}

	// The user's binary retries it; it finishes.
	failOpen.Store(false)
	must(cliWith(t, ctx, own, "retry", "--store", db, "a1"))
	runUntil(t, own, db, "a1", "done/success")
	code, out, errOut = cliWith(t, ctx, own, "send", "--store", db, "a1", "approved")
	refused("send to a finished execution", 1, `the execution is done (success): a worker would drop it; --force sends it anyway`, code, out, errOut)
	must(cliWith(t, ctx, own, "send", "--store", db, "a1", "approved", "--force"))
}
