package sqliteturn_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead/turn"
)

// The second process of the tests below is this test binary, run again with these variables.
const (
	childDBEnv   = "STEAD_SQLITETURN_CHILD_DB"
	childGoEnv   = "STEAD_SQLITETURN_CHILD_GO"
	childWorkEnv = "STEAD_SQLITETURN_CHILD_WORK"
)

const (
	processKeys   = 60 // idempotency keys both processes admit
	processOutbox = 90 // outbox rows both processes drain
)

// work is what each process does once both are told to go; it returns what it won, as strings.
var work = map[string]func(ctx context.Context, s turn.Stores, who string) ([]string, error){
	// admit begins a command under each shared key; it returns the keys it was admitted fresh
	// for, with the command id the store handed back either way.
	"admit": func(ctx context.Context, s turn.Stores, who string) ([]string, error) {
		var out []string
		for i := range processKeys {
			e := journalEntry("acct", fmt.Sprintf("key-%d", i), at(i))
			a, err := s.Journal.BeginCommand(ctx, e)
			if err != nil {
				return nil, fmt.Errorf("%s: begin key-%d: %w", who, i, err)
			}
			if a.Fresh != (a.Entry.CommandID == e.CommandID) {
				return nil, fmt.Errorf("%s: key-%d: fresh=%v but entry %s (mine %s)", who, i, a.Fresh, a.Entry.CommandID, e.CommandID)
			}
			if a.Fresh {
				out = append(out, fmt.Sprintf("key-%d=%s", i, e.CommandID))
			}
		}
		return out, nil
	},
	// claim drains the outbox two rows at a time; it returns the ids it claimed.
	"claim": func(ctx context.Context, s turn.Stores, who string) ([]string, error) {
		var out []string
		for {
			batch, err := s.Outbox.ClaimDue(ctx, at(1000), 2, who)
			if err != nil {
				return nil, fmt.Errorf("%s: claim: %w", who, err)
			}
			if len(batch) == 0 {
				return out, nil
			}
			for _, e := range batch {
				out = append(out, e.OutboxID.String())
			}
		}
	},
}

// twoProcesses runs work[name] in this process and in a second one on the same file, started at
// once, and returns what each won.
func twoProcesses(t *testing.T, s turn.Stores, path, name string) (mine, theirs []string) {
	t.Helper()
	goFile := filepath.Join(t.TempDir(), "go")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestProcessChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childDBEnv+"="+path, childGoEnv+"="+goFile, childWorkEnv+"="+name)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	ready := false
	for !ready && lines.Scan() {
		ready = lines.Text() == "child: ready"
	}
	if !ready {
		_ = cmd.Wait()
		t.Fatal("the child process never got ready")
	}
	if err := os.WriteFile(goFile, nil, 0o600); err != nil { // both start now
		t.Fatal(err)
	}
	mine, err = work[name](ctx, s, "parent")
	if err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
		if w, ok := strings.CutPrefix(lines.Text(), "child: won "); ok {
			if err := json.Unmarshal([]byte(w), &theirs); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child process: %v", err)
	}
	if len(mine) == 0 || len(theirs) == 0 {
		t.Logf("parent won %d, child %d: the processes barely overlapped", len(mine), len(theirs))
	}
	return mine, theirs
}

// TestProcessChild is the second process of the tests below; run on its own it does nothing.
func TestProcessChild(t *testing.T) {
	path, goFile, name := os.Getenv(childDBEnv), os.Getenv(childGoEnv), os.Getenv(childWorkEnv)
	if path == "" {
		t.Skip("only run by the two-process tests")
	}
	s := storeOn(t, openDB(t, path))
	fmt.Println("child: ready")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Microsecond) {
		if _, err := os.Stat(goFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never told to go")
		}
	}
	won, err := work[name](t.Context(), s, "child")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(won)
	fmt.Println("child: won " + string(b))
}

// Two processes admit the same idempotency keys at once: every key has exactly one Fresh
// admission across both, and the stored entry is the winner's.
func TestTwoProcessesAdmitOneKeyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second process")
	}
	t.Parallel()
	s, path := newStore(t)
	mine, theirs := twoProcesses(t, s, path, "admit")
	winner := map[string]string{}
	for _, w := range append(mine, theirs...) {
		key, cmd, _ := strings.Cut(w, "=")
		if prev, dup := winner[key]; dup {
			t.Fatalf("%s admitted fresh twice: %s and %s", key, prev, cmd)
		}
		winner[key] = cmd
	}
	if len(winner) != processKeys {
		t.Fatalf("%d keys admitted fresh, want %d", len(winner), processKeys)
	}
	t.Logf("parent won %d keys, child %d", len(mine), len(theirs))
	for key, cmd := range winner {
		a, err := s.Journal.BeginCommand(t.Context(), journalEntry("acct", key, at(0)))
		must(t, err, "replay "+key)
		if a.Fresh || a.Entry.CommandID.String() != cmd {
			t.Fatalf("%s replays %+v, want the winner %s", key, a, cmd)
		}
	}
}

// Two processes drain one outbox at once: no row is claimed by both, and together they claim
// every row.
func TestTwoProcessesNeverClaimOneRowTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second process")
	}
	t.Parallel()
	s, path := newStore(t)
	cmd := turn.NewID()
	for i := range processOutbox {
		must(t, s.Outbox.Enqueue(t.Context(), outboxEntry(cmd, "process-race", fmt.Sprintf("key-%d", i), at(i))), "enqueue")
	}
	mine, theirs := twoProcesses(t, s, path, "claim")
	by := map[string]string{}
	for who, ids := range map[string][]string{"parent": mine, "child": theirs} {
		for _, id := range ids {
			if prev, dup := by[id]; dup {
				t.Fatalf("row %s claimed by %s and %s", id, prev, who)
			}
			by[id] = who
		}
	}
	if len(by) != processOutbox {
		t.Fatalf("%d rows claimed, want %d", len(by), processOutbox)
	}
	t.Logf("parent claimed %d rows, child %d", len(mine), len(theirs))
}
