package worker_test

import (
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestKilledWorkerHoldsOnlyWhatItStarted: a worker process whose actions are slow (far longer
// than its 2 s Visibility) claims only as many messages as it has places (MaxWorkers 6), keeps
// their leases alive while its actions run (heartbeat: a second worker running beside it for
// twice the Visibility never takes them), and, once SIGKILLed, loses them to the second worker
// within the stated bound: Visibility after its last heartbeat, plus the second worker's
// IdleWait. Executions it never started are not held at all: the second worker finishes them
// while the first still runs. Nothing is lost or applied twice; the actions cut by the kill run
// again under the same keys (the ledger's replays), which is what Key is for.
func TestKilledWorkerHoldsOnlyWhatItStarted(t *testing.T) {
	t.Parallel()
	for _, c := range []backendCase{{"sqlite", sqliteSpec, false, 8}, {"sqlite one-tx", sqliteSpec, true, 8}, {"postgres", pgSpec, false, 8}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			const (
				executions = 20
				places     = 6
				visibility = 2 * time.Second // the helper process's
				idleWait   = 50 * time.Millisecond
			)
			b, spec, schema := openCase(t, c)
			ledgerPath := filepath.Join(t.TempDir(), "effects.db")
			exes := seedEffects(t, b, executions, 1)
			first := startWorkerProcess(t, spec, schema, ledgerPath, "first",
				append(c.helperEnv(), envHelperPause+"=10m", envHelperMaxWorkers+"="+strconv.Itoa(places))...)
			waitUntil(t, 60*time.Second, "the first worker's places all running an action", func() bool {
				return ledgerCount(t, ledgerPath) >= places
			})
			started := time.Now()
			second := startWorkerProcess(t, spec, schema, ledgerPath, "second", c.helperEnv()...)
			held := map[string]bool{}
			waitUntil(t, 60*time.Second, "the second worker finishing what the first did not start", func() bool {
				for _, id := range exes {
					held[id] = !allDone(b, []string{id})
				}
				return len(exes)-count(held) == executions-places
			})
			time.Sleep(time.Until(started.Add(2 * visibility))) // twice the lease: only heartbeats keep it
			l, err := openLedger(ledgerPath)
			if err != nil {
				t.Fatal(err)
			}
			var byFirst, rerun int
			if err := l.db.QueryRow(`SELECT count(*), coalesce(sum(runs > 1), 0) FROM effects WHERE worker = 'first'`).Scan(&byFirst, &rerun); err != nil {
				t.Fatal(err)
			}
			l.db.Close()
			if byFirst != places || rerun != 0 || count(held) != places {
				t.Fatalf("before the kill: the first worker started %d actions (want its %d places), %d were run again by the second (want 0: their leases are kept alive), %d executions unfinished (want %d)",
					byFirst, places, rerun, count(held), places)
			}

			if err := first.stop(t, syscall.SIGKILL); err == nil {
				t.Fatal("the SIGKILLed worker exited cleanly")
			}
			killed := time.Now()
			waitUntil(t, 60*time.Second, "the second worker finishing the killed worker's executions", func() bool { return allDone(b, exes) })
			took := time.Since(killed)
			// The leases the first worker held end at most Visibility after its last heartbeat,
			// which came before the kill; the second worker claims within its IdleWait after that.
			// The slack covers two processes sharing two cores under the race detector.
			if bound := visibility + idleWait + 5*time.Second; took > bound {
				t.Errorf("the killed worker's executions were finished %v after the kill; the bound is Visibility + IdleWait (+ slack) = %v", took, bound)
			}
			if err := second.stop(t, syscall.SIGTERM); err != nil {
				t.Fatalf("the second worker did not exit cleanly on SIGTERM: %v", err)
			}
			byWorker, replayed := checkEffects(t, b, ledgerPath, exes, 1)
			if replayed != places {
				t.Errorf("%d action keys ran twice, want the %d the kill cut short", replayed, places)
			}
			t.Logf("taken over %v after the kill; effects by worker %v, %d replayed", took.Round(time.Millisecond), byWorker, replayed)
		})
	}
}

func count(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}
