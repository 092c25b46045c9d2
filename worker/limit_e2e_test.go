package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/worker"
)

// inFlight counts the actions running at once, per customer and in all.
type inFlight struct {
	mu          sync.Mutex
	now, most   map[string]int
	total, peak int
}

func (f *inFlight) enter(customer string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now[customer]++
	f.most[customer] = max(f.most[customer], f.now[customer])
	f.total++
	f.peak = max(f.peak, f.total)
}

func (f *inFlight) leave(customer string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now[customer]--
	f.total--
}

// meteredEngine runs "metered": each work event runs an action that takes d, and a finish event
// ends the execution; at most two executions of a customer have a step in flight.
func meteredEngine(t *testing.T, d time.Duration, f *inFlight) *chart.Engine {
	t.Helper()
	def, err := chart.Parse("metered", []byte(`
context: {customer: string}
limit: {key: context.customer, concurrency: 2}
initial: open
states:
  open:
    on:
      work: {actions: [call]}
      finish: closed
  closed: {final: success}
`))
	if err != nil {
		t.Fatal(err)
	}
	reg := chart.NewRegistry().Action("call", func(c chart.ActionContext) (chart.ActionResult, error) {
		customer := c.String("customer")
		f.enter(customer)
		defer f.leave(customer)
		select {
		case <-time.After(d):
		case <-c.Context().Done():
			return chart.ActionResult{}, c.Context().Err()
		}
		return chart.ActionResult{}, nil
	})
	eng, err := chart.NewEngine(def, reg)
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// TestLimitPerKey: a definition's limit holds on every backend and mode — no customer ever has
// more than two executions with a step in flight, while the customers run side by side — and
// a finished execution's key is forgotten, leaving nothing admitted or waiting.
func TestLimitPerKey(t *testing.T) {
	for _, c := range admissionCases() {
		if c.batch == 0 {
			c.batch = 32
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := openAdmissionCase(t, c)
			f := &inFlight{now: map[string]int{}, most: map[string]int{}}
			machines := worker.Machines{"metered": meteredEngine(t, 20*time.Millisecond, f)}
			w, err := worker.New(worker.Config{
				Store: b.Store, Transport: b.Transport, Machines: machines, Name: "w",
				// Four loops: unbatched, each runs one step at a time, and three customers of
				// two places each need more than two to show they run side by side.
				Concurrency: 4, BatchSize: c.batch, SharedTx: b.shared(t, c.shared), Finisher: b.finisher(t, c.shared),
				TimerInterval: -1, RelayInterval: 200 * time.Millisecond,
				IdleWait: 20 * time.Millisecond, RetryDelay: 20 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			client := &worker.Client{Store: b.Store, Transport: b.Transport, Known: machines}
			const customers, each, works = 3, 5, 2
			var news []worker.NewExecution
			for k := range customers {
				for i := range each {
					news = append(news, worker.NewExecution{DefinitionID: "metered", ID: fmt.Sprintf("c%d-x%d", k, i),
						Context: json.RawMessage(fmt.Sprintf(`{"customer":"c%d"}`, k))})
				}
			}
			if _, err := client.CreateBatch(ctx, news); err != nil {
				t.Fatal(err)
			}
			for _, n := range news {
				for k := range works {
					if _, err := client.Send(ctx, n.ID, stead.Event{ID: fmt.Sprintf("%s-w%d", n.ID, k), Kind: "work"}); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := client.Send(ctx, n.ID, stead.Event{ID: n.ID + "-end", Kind: "finish"}); err != nil {
					t.Fatal(err)
				}
			}
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- w.Run(runCtx) }()
			var stopped bool
			halt := func() {
				if !stopped {
					stopped = true
					stop()
					if err := <-done; err != nil {
						t.Errorf("Run: %v", err)
					}
				}
			}
			defer halt()
			waitUntil(t, 90*time.Second, "every execution done", func() bool {
				for _, n := range news {
					exe, err := b.Store.Load(ctx, n.ID)
					if err != nil || exe.Status != stead.StatusDone {
						return false
					}
				}
				return true
			})
			f.mu.Lock()
			most, peak := f.most, f.peak
			f.mu.Unlock()
			for k := range customers {
				if m := most[fmt.Sprintf("c%d", k)]; m > 2 || m < 1 {
					t.Errorf("customer c%d had %d steps in flight at once, want 1..2 (limit 2)", k, m)
				}
			}
			if peak <= 2 {
				t.Errorf("at most %d steps ran at once over %d customers: the customers did not run side by side", peak, customers)
			}
			// Every execution finished: its key gives its place back, and the worker tells the
			// transport to forget it (at the latest as it stops): an event to a finished execution
			// is not limited any more, so its group is not admitted under the key.
			halt()
			if err := b.Transport.Publish(ctx, news[0].ID, stead.Event{ID: "late", Kind: "work"}, 0); err != nil {
				t.Fatal(err)
			}
			if st, err := b.Transport.FlowState(ctx, "metered/customer=c0"); err != nil || st.Admitted != 0 || st.Waiting != 0 {
				t.Errorf("after a late event to a finished execution FlowState = %+v, %v: its key was not forgotten", st, err)
			}
			waitUntil(t, 10*time.Second, "nothing admitted", func() bool {
				for k := range customers {
					st, err := b.Transport.FlowState(ctx, fmt.Sprintf("metered/customer=c%d", k))
					if err != nil || st.Admitted != 0 || st.Waiting != 0 || st.Concurrency != 2 {
						return false
					}
				}
				return true
			})
		})
	}
}

// TestLimitNeedsATransportThatLimits: a worker whose definitions declare a limit refuses a
// transport that cannot enforce it, rather than run unlimited.
func TestLimitNeedsATransportThatLimits(t *testing.T) {
	f := &inFlight{now: map[string]int{}, most: map[string]int{}}
	_, err := worker.New(worker.Config{
		Store: memstore.New(), Transport: transport.New(unlimited{}),
		Machines: worker.Machines{"metered": meteredEngine(t, time.Millisecond, f)}, Name: "w",
	})
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("New with a limit on a transport without flows = %v, want ErrUnsupported", err)
	}
}

// unlimited is a transport backend without flows (nothing in it is ever called).
type unlimited struct{ transport.Backend }
