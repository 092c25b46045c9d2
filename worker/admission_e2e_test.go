package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/worker"
)

// tally is a Machine that starts into "counting" and counts its "tick" events in its context
// ({"n": count}), so a test can tell every event that was applied from one that was dropped.
type tally struct{}

func (tally) Step(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	next := exe.Clone()
	b := stead.Bundle{ProcessedEventID: ev.ID}
	var c struct {
		N int `json:"n"`
	}
	if len(next.Context) > 0 {
		if err := json.Unmarshal(next.Context, &c); err != nil {
			return nil, b, err
		}
	}
	switch {
	case ev.Kind == chart.KindStart && next.Status == stead.StatusPending:
		next.Status, next.ActivePath = stead.StatusRunning, "counting"
	case ev.Kind == "tick" && next.Status == stead.StatusRunning:
		c.N++
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, b, err
	}
	next.Context, next.UpdatedAt = raw, now
	return next, b, nil
}

// tallyOf loads id and returns its count and status.
func tallyOf(t *testing.T, s *stead.Store, id string) (int, stead.Status) {
	t.Helper()
	exe, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatalf("Load %s: %v", id, err)
	}
	var c struct {
		N int `json:"n"`
	}
	if len(exe.Context) > 0 {
		if err := json.Unmarshal(exe.Context, &c); err != nil {
			t.Fatalf("context of %s: %v", id, err)
		}
	}
	return c.N, exe.Status
}

// failingPublish is a transport backend whose PublishBatch fails while fail is set, as a
// database that goes away between a create's commit and its publish.
type failingPublish struct {
	transport.Backend
	fail *atomic.Bool
}

func (f failingPublish) PublishBatch(ctx context.Context, msgs []transport.Outgoing) error {
	if f.fail.Load() {
		return stead.ErrUnavailable
	}
	return f.Backend.PublishBatch(ctx, msgs)
}

// lostAnswer is a store backend whose Commit lands and then reports ErrTimeout while lose is
// set, as a COMMIT that reached the server whose answer the network lost.
type lostAnswer struct {
	stead.Backend
	lose *atomic.Bool
}

func (l lostAnswer) Commit(ctx context.Context, w *stead.Write) ([]int64, error) {
	seqs, err := l.Backend.Commit(ctx, w)
	if err == nil && l.lose.Load() {
		return nil, stead.ErrTimeout
	}
	return seqs, err
}

// admissionCases are the end-to-end backend cases and the memory backend.
func admissionCases() []backendCase {
	return append([]backendCase{{name: "memory"}}, backendCases...)
}

// openAdmissionCase opens c; the memory case has no spec.
func openAdmissionCase(t *testing.T, c backendCase) *testBackend {
	t.Helper()
	if c.spec == nil {
		b := &testBackend{Store: memstore.New(), Transport: memtransport.New(memtransport.WithPollInterval(20 * time.Millisecond))}
		t.Cleanup(func() { _ = b.Transport.Close(); _ = b.Store.Close() })
		return b
	}
	b, _, _ := openCase(t, c)
	return b
}

// runTally runs one worker of case c with the tally machine until the test ends. The relay never
// runs after the first recovery, so what the test sees is the worker's own admission.
func runTally(t *testing.T, b *testBackend, c backendCase) {
	t.Helper()
	w, err := worker.New(worker.Config{
		Store: b.Store, Transport: b.Transport, Machines: worker.Machines{"tally": tally{}},
		Name: "w", Concurrency: 2, BatchSize: max(c.batch, 1), SharedTx: b.shared(t, c.shared), Finisher: b.finisher(t, c.shared),
		TimerInterval: -1, RelayInterval: time.Hour, IdleWait: 20 * time.Millisecond,
		RetryDelay: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// TestEventsOvertakingTheStartAreApplied: a create whose start could not be published leaves the
// start in the outbox; the events sent to the execution meanwhile reach its queue first. Each is
// applied — the worker applies the start before the first of them — and none is acknowledged
// unapplied; Create says the start was deferred; the start published later is dropped as done.
func TestEventsOvertakingTheStartAreApplied(t *testing.T) {
	for _, c := range admissionCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := openAdmissionCase(t, c)
			ctx := context.Background()
			var fail atomic.Bool
			fail.Store(true)
			broken := &worker.Client{Store: b.Store, Transport: transport.New(failingPublish{b.Transport.Backend(), &fail})}
			exe, err := broken.Create(ctx, "tally", "a", nil)
			if !errors.Is(err, worker.ErrStartDeferred) || !errors.Is(err, stead.ErrUnavailable) {
				t.Fatalf("Create with a failing publish: err = %v, want ErrStartDeferred wrapping ErrUnavailable", err)
			}
			if exe == nil || exe.ID != "a" {
				t.Fatalf("Create with a failing publish returned %+v, want the created execution", exe)
			}
			client := &worker.Client{Store: b.Store, Transport: b.Transport}
			for _, id := range []string{"t1", "t2", "t3"} {
				if _, err := client.Send(ctx, "a", stead.Event{ID: id, Kind: "tick"}); err != nil {
					t.Fatalf("Send %s: %v", id, err)
				}
			}
			runTally(t, b, c)
			waitUntil(t, 10*time.Second, "three ticks applied", func() bool {
				n, st := tallyOf(t, b.Store, "a")
				return n == 3 && st == stead.StatusRunning
			})
			// The start left in the outbox, published now, is dropped as already applied.
			fail.Store(false)
			w, err := worker.New(worker.Config{Store: b.Store, Transport: b.Transport, Machines: worker.Machines{"tally": tally{}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Recover(ctx); err != nil {
				t.Fatalf("Recover: %v", err)
			}
			if _, err := client.Send(ctx, "a", stead.Event{ID: "t4", Kind: "tick"}); err != nil {
				t.Fatalf("Send t4: %v", err)
			}
			waitUntil(t, 10*time.Second, "the fourth tick applied", func() bool {
				n, _ := tallyOf(t, b.Store, "a")
				return n == 4
			})
			if n, st := tallyOf(t, b.Store, "a"); n != 4 || st != stead.StatusRunning {
				t.Fatalf("after the late start: n = %d, status %s; want 4, running", n, st)
			}
		})
	}
}

// TestRetriedCreatePublishesThePendingStart: a create whose commit landed but whose answer was
// lost is retried; the retry finds the id taken (ErrAlreadyExists) and publishes the start the
// first attempt never did, so the execution starts without waiting for a relay.
func TestRetriedCreatePublishesThePendingStart(t *testing.T) {
	for _, c := range admissionCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := openAdmissionCase(t, c)
			ctx := context.Background()
			var lose atomic.Bool
			lose.Store(true)
			lossy := &worker.Client{Store: stead.NewStore(lostAnswer{b.Store.Backend(), &lose}), Transport: b.Transport}
			if _, err := lossy.Create(ctx, "tally", "a", nil); !errors.Is(err, stead.ErrTimeout) {
				t.Fatalf("Create whose answer is lost: err = %v, want ErrTimeout", err)
			}
			client := &worker.Client{Store: b.Store, Transport: b.Transport}
			if _, err := client.Create(ctx, "tally", "a", nil); !errors.Is(err, stead.ErrAlreadyExists) {
				t.Fatalf("retried Create: err = %v, want ErrAlreadyExists", err)
			}
			ls, err := b.Transport.ClaimBatch(ctx, "probe", time.Minute, 0, 10)
			if err != nil {
				t.Fatalf("ClaimBatch: %v", err)
			}
			if len(ls) != 1 || ls[0].Group != "a" || ls[0].Event.ID != worker.StartEventID("a") {
				t.Fatalf("queued after the retried Create: %+v, want the start of a", ls)
			}
			if err := b.Transport.Nack(ctx, &ls[0], 0); err != nil {
				t.Fatalf("Nack: %v", err)
			}
			runTally(t, b, c)
			waitUntil(t, 10*time.Second, "a started", func() bool {
				_, st := tallyOf(t, b.Store, "a")
				return st == stead.StatusRunning
			})
			if _, err := client.Create(ctx, "tally", "a", nil); !errors.Is(err, stead.ErrAlreadyExists) {
				t.Fatalf("Create of a running execution: err = %v, want ErrAlreadyExists", err)
			}
		})
	}
}
