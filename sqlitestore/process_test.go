package sqlitestore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/sqlitedb"
)

// The second process of TestTwoProcesses is this test binary, run again with these variables.
const (
	childDBEnv   = "STEAD_SQLITESTORE_CHILD_DB"
	childGoEnv   = "STEAD_SQLITESTORE_CHILD_GO"
	processIDs   = 3
	processSteps = 150
)

// TestTwoProcesses runs the same load-modify-commit loop in this process and in a second one
// over the same executions in the same file, starting both at once, and checks that the CAS let
// exactly one writer win each version across both processes, and that neither saw SQLITE_BUSY or
// anything but conflicts.
func TestTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second process")
	}
	t.Parallel()
	s, path := open(t)
	ids := make([]string, processIDs)
	for i := range ids {
		ids[i] = fmt.Sprintf("shared-%d", i)
		mustCommit(t, s, newExe(ids[i]), stead.Bundle{})
	}
	goFile := filepath.Join(t.TempDir(), "go")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestTwoProcessesChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childDBEnv+"="+path, childGoEnv+"="+goFile)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	var childWins []string
	ready := false
	for !ready && lines.Scan() {
		ready = lines.Text() == "child: ready"
	}
	if !ready {
		cmd.Wait()
		t.Fatal("the child process never got ready")
	}
	// Both loops start now.
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	mine, err := casLoop(ctx, s, ids, "parent")
	if err != nil {
		t.Fatalf("parent: %v", err)
	}
	for lines.Scan() {
		if w, ok := strings.CutPrefix(lines.Text(), "child: wins "); ok {
			if err := json.Unmarshal([]byte(w), &childWins); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child process: %v", err)
	}
	if len(childWins) == 0 || len(mine) == 0 {
		t.Logf("parent won %d, child won %d: the processes barely overlapped", len(mine), len(childWins))
	}
	t.Logf("parent won %d, child won %d of %d attempts each", len(mine), len(childWins), processIDs*processSteps)
	// A lost CAS wrote nothing: the outbox holds exactly one entry per win.
	if entries, err := s.PendingOutbox(ctx, "", stead.MaxListLimit); err != nil || len(entries) != len(mine)+len(childWins) {
		t.Fatalf("outbox holds %d entries (%v) for %d wins", len(entries), err, len(mine)+len(childWins))
	}
	checkWins(t, s, ids, func(yield func(string, int64) bool) {
		for _, w := range append(mine, childWins...) {
			id, v, _ := strings.Cut(w, "@")
			var n int64
			fmt.Sscan(v, &n)
			if !yield(id, n) {
				return
			}
		}
	})
}

// TestTwoProcessesChild is the second process of TestTwoProcesses; run on its own it does nothing.
func TestTwoProcessesChild(t *testing.T) {
	path, goFile := os.Getenv(childDBEnv), os.Getenv(childGoEnv)
	if path == "" {
		t.Skip("only run by TestTwoProcesses")
	}
	s := newStore(t, openDB(t, sqlitedb.Config{Path: path}))
	fmt.Println("child: ready")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Microsecond) {
		if _, err := os.Stat(goFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never told to go")
		}
	}
	ids := make([]string, processIDs)
	for i := range ids {
		ids[i] = fmt.Sprintf("shared-%d", i)
	}
	wins, err := casLoop(t.Context(), s, ids, "child")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(wins)
	fmt.Printf("child: wins %s\n", b)
}

// casLoop loads, changes and commits each id in turn, processSteps times, and returns the
// "id@version" of every commit it won. Any error but a lost CAS ends it.
func casLoop(ctx context.Context, s *stead.Store, ids []string, who string) ([]string, error) {
	var wins []string
	for i := range processSteps {
		id := ids[i%len(ids)]
		exe, err := s.Load(ctx, id)
		if err != nil {
			return wins, err
		}
		exe.Context = json.RawMessage(fmt.Sprintf(`{"by":%q,"step":%d}`, who, i))
		c, err := s.Commit(ctx, exe, stead.Bundle{
			ProcessedEventID: fmt.Sprintf("%s-%d", who, i),
			Emits:            []stead.Emit{{Target: id, Event: stead.Event{ID: fmt.Sprintf("%s-%d", who, i), Kind: "Step"}}},
		})
		switch {
		case err == nil:
			wins = append(wins, fmt.Sprintf("%s@%d", id, c.Version))
		case errors.Is(err, stead.ErrConflict):
		default:
			return wins, err
		}
	}
	return wins, nil
}
