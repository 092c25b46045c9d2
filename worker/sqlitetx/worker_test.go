package sqlitetx_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/worker"
)

// recorder is a Finisher that writes down what each of its transactions did, in order, and can
// fail a publish.
type recorder struct {
	worker.Finisher
	store *stead.Store

	failPublish atomic.Int64 // how many publishes to fail

	mu  sync.Mutex
	txs [][]string
	// after is the version of "p" read once a failed transaction rolled back.
	after []int64
}

func (r *recorder) BeginFinish(ctx context.Context) (worker.FinishTx, error) {
	tx, err := r.Finisher.BeginFinish(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.txs = append(r.txs, nil)
	return &recTx{FinishTx: tx, r: r, i: len(r.txs) - 1}, nil
}

func (r *recorder) log(i int, format string, args ...any) {
	r.mu.Lock()
	r.txs[i] = append(r.txs[i], fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

type recTx struct {
	worker.FinishTx
	r     *recorder
	i     int
	ended bool
}

func (t *recTx) CommitBatch(ctx context.Context, items []stead.CommitItem) ([]stead.CommitResult, error) {
	res, err := t.FinishTx.CommitBatch(ctx, items)
	for k, it := range items {
		verdict := "won"
		if err == nil && errors.Is(res[k].Err, stead.ErrConflict) {
			verdict = "lost"
		}
		t.r.log(t.i, "commit:%s:%s:emits=%d", it.Execution.ID, verdict, len(it.Bundle.Emits))
	}
	return res, err
}

func (t *recTx) Publish(ctx context.Context, msgs []transport.Outgoing) error {
	for _, m := range msgs {
		t.r.log(t.i, "publish:%s:%s", m.Group, m.Event.Kind)
	}
	if t.r.failPublish.Add(-1) >= 0 {
		t.r.log(t.i, "FAILED")
		return errors.New("injected publish failure")
	}
	return t.FinishTx.Publish(ctx, msgs)
}

func (t *recTx) Ack(ctx context.Context, ls []transport.Lease) error {
	for _, l := range ls {
		t.r.log(t.i, "ack:%s", l.Group)
	}
	return t.FinishTx.Ack(ctx, ls)
}

func (t *recTx) Nack(ctx context.Context, l *transport.Lease, delay time.Duration) error {
	t.r.log(t.i, "nack:%s", l.Group)
	return t.FinishTx.Nack(ctx, l, delay)
}

func (t *recTx) Commit(ctx context.Context) error {
	err := t.FinishTx.Commit(ctx)
	if err == nil {
		t.ended = true
		t.r.log(t.i, "COMMIT")
	}
	return err
}

func (t *recTx) Rollback(ctx context.Context) error {
	err := t.FinishTx.Rollback(ctx)
	if !t.ended {
		t.ended = true
		t.r.log(t.i, "ROLLBACK")
		if exe, lerr := t.r.store.Load(ctx, "p"); lerr == nil {
			t.r.mu.Lock()
			t.r.after = append(t.r.after, exe.Version)
			t.r.mu.Unlock()
		}
	}
	return err
}

// pingPong is a pinger "p" whose "ping" sends a "pong" to the catcher "c", and the catcher,
// which ends on its pong. interfere, when set, runs inside the pinger's action the first time.
func pingPong(t *testing.T, runs *atomic.Int64, interfere func()) worker.Machines {
	t.Helper()
	pinger := chart.New("pinger").Initial("idle")
	pinger.State("idle").On("ping", "sent").Do("send")
	pinger.State("sent").Final(chart.OutcomeSuccess)
	pd, err := pinger.Definition()
	if err != nil {
		t.Fatal(err)
	}
	reg := chart.NewRegistry().Action("send", func(chart.ActionContext) (chart.ActionResult, error) {
		if runs.Add(1) == 1 && interfere != nil {
			interfere()
		}
		return chart.ActionResult{Send: []chart.Message{{To: "c", Kind: "pong"}}}, nil
	})
	pe, err := chart.NewEngine(pd, reg)
	if err != nil {
		t.Fatal(err)
	}
	catcher := chart.New("catcher").Initial("waiting")
	catcher.State("waiting").On("pong", "caught")
	catcher.State("caught").Final(chart.OutcomeSuccess)
	cd, err := catcher.Definition()
	if err != nil {
		t.Fatal(err)
	}
	ce, err := chart.NewEngine(cd, chart.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return worker.Machines{"pinger": pe, "catcher": ce}
}

// TestWorkerFinishesInOneTransaction runs a real worker with the finisher, for every batch
// size that takes a different path (one message, a batch): the pinger's step, its pong and the
// ping's ack go in one transaction, and the pong reaches the catcher with no outbox row and no
// relay (the periodic relay is off); a publish that fails inside the transaction leaves the step
// uncommitted and the ping is delivered again and applied once; a step that loses its
// compare-and-swap is nacked in the transaction that learnt it, never acked.
func TestWorkerFinishesInOneTransaction(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		batch       int
		failPublish int64
		interfere   bool
		memory      bool // on sqlitedb.Memory, whose rollback journal makes COMMIT wait for readers
		// want are the transactions of the pinger's step, in order, as the recorder writes
		// them: the pong is routed out of the commit (emits=0) and published in it.
		want []string
	}{
		{name: "one transaction", batch: 1, want: []string{
			"commit:p:won:emits=0 publish:c:pong ack:p COMMIT"}},
		{name: "one transaction batched", batch: 16, want: []string{
			"commit:p:won:emits=0 publish:c:pong ack:p COMMIT"}},
		{name: "one transaction in memory", batch: 16, memory: true, want: []string{
			"commit:p:won:emits=0 publish:c:pong ack:p COMMIT"}},
		{name: "publish fails", batch: 16, failPublish: 1, want: []string{
			"commit:p:won:emits=0 publish:c:pong FAILED ROLLBACK",
			"commit:p:won:emits=0 publish:c:pong ack:p COMMIT"}},
		{name: "lost compare-and-swap", batch: 16, interfere: true, want: []string{
			"commit:p:lost:emits=0 nack:p COMMIT",
			"commit:p:won:emits=0 publish:c:pong ack:p COMMIT"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "stead.db")
			if c.memory {
				path = sqlitedb.Memory
			}
			b := openAt(t, path)
			ctx := context.Background()
			rec := &recorder{Finisher: b.fin, store: b.store}
			rec.failPublish.Store(c.failPublish)
			var runs atomic.Int64
			var interfere func()
			if c.interfere {
				// Another writer commits "p" between the worker's load and its commit. It runs
				// inside the action, so it also shows that no write lock is held while actions
				// run: it would wait for ever otherwise.
				interfere = func() {
					cur, err := b.store.Load(ctx, "p")
					if err == nil {
						_, err = b.store.Commit(ctx, cur, stead.Bundle{})
					}
					if err != nil {
						t.Errorf("interfering commit: %v", err)
					}
				}
			}
			machines := pingPong(t, &runs, interfere)
			w, err := worker.New(worker.Config{
				Store: b.store, Transport: b.tr, Machines: machines, Name: "w", Concurrency: 1,
				BatchSize: c.batch, Finisher: rec, RelayInterval: -1, TimerInterval: -1,
				IdleWait: 10 * time.Millisecond, RetryDelay: 10 * time.Millisecond,
				Logger: slog.New(slog.DiscardHandler),
			})
			if err != nil {
				t.Fatal(err)
			}
			cl := &worker.Client{Store: b.store, Transport: b.tr, Known: machines}
			for _, id := range []string{"c", "p"} {
				if _, err := cl.Create(ctx, map[string]string{"c": "catcher", "p": "pinger"}[id], id, nil); err != nil {
					t.Fatal(err)
				}
			}
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- w.Run(runCtx) }()
			defer func() {
				stop()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()
			status := func(id string) (*stead.Execution, bool) {
				exe, err := b.store.Load(ctx, id)
				return exe, err == nil && exe.Status == stead.StatusDone
			}
			waitFor(t, "both started", func() bool {
				p, errP := b.store.Load(ctx, "p")
				c, errC := b.store.Load(ctx, "c")
				return errP == nil && errC == nil && p.Status == stead.StatusRunning && c.Status == stead.StatusRunning
			})
			before, _ := status("p")
			rec.mu.Lock()
			started := len(rec.txs)
			rec.mu.Unlock()
			if _, err := cl.Send(ctx, "p", stead.Event{ID: "ping-1", Kind: "ping"}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the pong caught", func() bool {
				_, pDone := status("p")
				_, cDone := status("c")
				return pDone && cDone
			})

			var got []string
			rec.mu.Lock()
			for _, tx := range rec.txs[started:] {
				line := strings.Join(tx, " ")
				if strings.Contains(line, ":p:") { // the pinger's step; the catcher's is its own
					got = append(got, line)
				}
			}
			after := rec.after
			rec.mu.Unlock()
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("the pinger's transactions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if want := int64(len(c.want)); runs.Load() != want {
				t.Errorf("the pinger's action ran %d times, want %d (once per delivery of the ping)", runs.Load(), want)
			}
			if c.failPublish > 0 {
				// Read after the failed transaction rolled back: the step was not committed.
				if len(after) == 0 || after[0] != before.Version {
					t.Errorf("p's version after the failed transaction: %v, want %d (unchanged)", after, before.Version)
				}
			}
			outbox, err := b.store.PendingOutbox(ctx, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(outbox) != 0 {
				t.Errorf("outbox holds %+v, want nothing: the pong was published with its commit", outbox)
			}
			p, _ := status("p")
			cExe, _ := status("c")
			// The ping is one version more than before it (and the interfering commit one more);
			// the catcher's pong one more than its start.
			wantP := before.Version + 1
			if c.interfere {
				wantP++
			}
			if p.Version != wantP || cExe.Version != before.Version+1 {
				t.Errorf("versions p=%d c=%d, want p=%d c=%d: each event applied once", p.Version, cExe.Version, wantP, before.Version+1)
			}
		})
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
