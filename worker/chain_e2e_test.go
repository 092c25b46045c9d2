package worker_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/worker"
)

// TestSharedTxChains drains a backlog of queued events per execution through the shared
// transaction with and without chains (GroupDepth 16 and 1): every event is applied exactly once
// and in order with one action key each, the executions end at the same versions either way (one
// per event), and with chains one commit served several events.
func TestSharedTxChains(t *testing.T) {
	t.Parallel()
	const executions, work = 12, 40
	versions := map[int]map[string]int64{}
	var mu sync.Mutex
	for _, depth := range []int{1, 16} {
		b, _, _ := openCase(t, backendCase{"postgres shared-tx batched", pgSpec, true, 32})
		ledger := filepath.Join(t.TempDir(), "effects.db")
		machines, err := effectsMachine(mustLedger(t, ledger), "w", 0)
		if err != nil {
			t.Fatal(err)
		}
		exes := seedEffects(t, b, executions, work)
		commits := map[string]map[int64]int{} // execution -> version -> events its commit applied
		runUntilAllDone(t, b, exes, worker.Config{
			Store: b.Store, Transport: b.Transport, Machines: machines, Name: "chains",
			Concurrency: 2, BatchSize: 32, GroupDepth: depth, SharedTx: b.shared(t, true),
			IdleWait: 20 * time.Millisecond, RetryDelay: 20 * time.Millisecond,
			OnCommit: func(exe *stead.Execution, ev stead.Event, _ time.Time) {
				mu.Lock()
				defer mu.Unlock()
				if commits[exe.ID] == nil {
					commits[exe.ID] = map[int64]int{}
				}
				commits[exe.ID][exe.Version]++
			},
		})
		if _, replayed := checkEffects(t, b, ledger, exes, work); replayed != 0 {
			t.Errorf("depth %d: %d action keys ran twice without a crash", depth, replayed)
		}
		versions[depth] = map[string]int64{}
		events, steps := 0, 0
		for _, id := range exes {
			exe, err := b.Store.Load(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			versions[depth][id] = exe.Version
			mu.Lock()
			for _, n := range commits[id] {
				events += n
				steps++
			}
			mu.Unlock()
		}
		t.Logf("depth %d: %d commits for %d events", depth, steps, events)
		if want := executions * (work + 2); events != want {
			t.Errorf("depth %d: OnCommit saw %d events, want %d (start, work, finish)", depth, events, want)
		}
		switch {
		case depth == 1 && steps != events:
			t.Errorf("depth 1: %d commits for %d events, want one each", steps, events)
		case depth > 1 && steps*2 > events:
			t.Errorf("depth %d: %d commits for %d events, want chains of several", depth, steps, events)
		}
	}
	for id, v := range versions[1] {
		if versions[16][id] != v {
			t.Errorf("%s: version %d with chains, %d without; want the same", id, versions[16][id], v)
		}
	}
}

// mustLedger creates the effects ledger at path, closed when the test ends.
func mustLedger(t *testing.T, path string) *effectsLedger {
	t.Helper()
	l, err := openLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.db.Close() })
	return l
}
