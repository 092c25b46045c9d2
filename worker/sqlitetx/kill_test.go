package sqlitetx_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/sqlitetransport"
	"github.com/steadhq/stead/worker/sqlitetx"
)

// Environment variables that turn the test binary into a process that finishes a round on a file
// and is killed (SIGKILL, by itself) in the middle: the file and when to die ("before" or
// "after" COMMIT).
const (
	envKillFile = "SQLITETX_TEST_KILL_FILE"
	envKillAt   = "SQLITETX_TEST_KILL_AT"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(envKillFile); path != "" {
		err := finishAndDie(path, os.Getenv(envKillAt))
		fmt.Fprintln(os.Stderr, "not killed:", err)
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// finishAndDie claims the message of "a" and runs the round of its step — the commit of "a", the
// publish of its pong to "b", the ack — then SIGKILLs itself before or after COMMIT.
func finishAndDie(path, at string) error {
	ctx := context.Background()
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: path})
	if err != nil {
		return err
	}
	store, err := sqlitestore.New(ctx, db)
	if err != nil {
		return err
	}
	tr, err := sqlitetransport.New(ctx, db)
	if err != nil {
		return err
	}
	fin, err := sqlitetx.New(db, store, tr)
	if err != nil {
		return err
	}
	exe, err := store.Load(ctx, "a")
	if err != nil {
		return err
	}
	leases, err := tr.ClaimBatch(ctx, "doomed", time.Second, 0, 10)
	if err != nil || len(leases) != 1 {
		return fmt.Errorf("claim: %v, %v", leases, err)
	}
	tx, err := fin.BeginFinish(ctx)
	if err != nil {
		return err
	}
	next := exe.Clone()
	next.ActivePath = "d/y"
	if _, err := tx.CommitBatch(ctx, []stead.CommitItem{{Execution: next, Bundle: stead.Bundle{ProcessedEventID: leases[0].Event.ID}}}); err != nil {
		return err
	}
	if err := tx.Publish(ctx, []transport.Outgoing{{Group: "b", Event: stead.Event{ID: "pong-1", Kind: "pong"}}}); err != nil {
		return err
	}
	if err := tx.Ack(ctx, leases); err != nil {
		return err
	}
	if at == "after" {
		if err := tx.Commit(ctx); err != nil {
			return err
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGKILL); err != nil {
		return err
	}
	select {}
}

// TestKilledMidFinish kills a process (SIGKILL) in the middle of a round's transaction, and
// right after its COMMIT: before, nothing of the round is left — the step is not committed,
// nothing published, the message is delivered again once its lease ends; after, all of it is,
// and nothing is done again.
func TestKilledMidFinish(t *testing.T) {
	t.Parallel()
	for _, at := range []string{"before", "after"} {
		t.Run(at+" COMMIT", func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "stead.db")
			b := openAt(t, path)
			exe := &stead.Execution{ID: "a", DefinitionID: "d", Status: stead.StatusRunning, ActivePath: "d/x"}
			res, err := b.store.Commit(ctx, exe, stead.Bundle{})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.tr.Publish(ctx, "a", stead.Event{ID: "ping-1", Kind: "ping"}, 0); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envKillFile+"="+path, envKillAt+"="+at)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("the process was not killed: %v\n%s", err, out)
			}

			got, err := b.store.Load(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			outbox, err := b.store.PendingOutbox(ctx, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			var queued []string
			for deadline := time.Now().Add(10 * time.Second); len(queued) == 0 && time.Now().Before(deadline); {
				// The killed process's lease lasts a second.
				leases, err := b.tr.ClaimBatch(ctx, "survivor", time.Minute, 0, 10)
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range leases {
					queued = append(queued, l.Group+":"+l.Event.ID)
				}
				time.Sleep(50 * time.Millisecond)
			}
			wantVersion, wantQueued := res.Version, "a:ping-1"
			if at == "after" {
				wantVersion, wantQueued = res.Version+1, "b:pong-1"
			}
			if got.Version != wantVersion || len(outbox) != 0 || len(queued) != 1 || queued[0] != wantQueued {
				t.Errorf("after the kill: version %d (want %d), outbox %d rows (want 0), queued %v (want [%s])",
					got.Version, wantVersion, len(outbox), queued, wantQueued)
			}
		})
	}
}
