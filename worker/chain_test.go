package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// tracing is the counter machine with its trace ring on: every step records a ring entry.
type tracing struct{ counter }

func (m tracing) Step(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	next, b, err := m.counter.Step(exe, ev, now)
	if err == nil {
		b.Trace = &stead.TraceStep{EventID: ev.ID, EventKind: ev.Kind}
	}
	return next, b, err
}

// recording is the counter machine noting the version each event is stepped at.
type recording struct {
	counter
	at map[string]int64
}

func (m *recording) Step(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	m.at[ev.ID] = exe.Version
	return m.counter.Step(exe, ev, now)
}

// TestPlanChains holds the batch plan to its rule for consecutive messages of one execution: they
// are applied in order from the state the ones before left and commit as one item; the chain stops
// at the first message it cannot apply, which is settled only if the chain commits, and leaves the
// messages behind that one alone.
func TestPlanChains(t *testing.T) {
	t.Parallel()
	rec := &recording{at: map[string]int64{}}
	w := &Worker{cfg: Config{Machines: Machines{"counter": rec, "traced": tracing{}},
		Clock: time.Now, RetryDelay: time.Second, SuspendRecheck: 5 * time.Second}}
	w.log = slog.New(slog.DiscardHandler)
	running := func(def string) *stead.Execution {
		return &stead.Execution{ID: "x", DefinitionID: def, Status: stead.StatusRunning, Version: 7,
			Context: json.RawMessage(`{"n":0,"joined":0}`)}
	}
	for _, tc := range []struct {
		name      string
		exe       *stead.Execution
		kinds     []string // one message each, event id "e<index>" ("tick@e1": the id e1)
		processed []int    // messages the store says were applied already
		want      chainWant
	}{
		{"all applied", running("counter"), []string{"tick", "tick", "emit", "tick"}, nil,
			chainWant{1, 3, []string{"e0", "e1", "e2", "e3"}, 1, []string{"e0", "e1", "e2", "e3"}, nil, []string{"e0"}}},
		{"a duplicate inside", running("counter"), []string{"tick", "tick", "tick"}, []int{1},
			chainWant{1, 2, []string{"e0", "e2"}, 0, []string{"e0", "e1", "e2"}, nil, []string{"e0"}}},
		{"duplicates first", running("counter"), []string{"tick", "tick", "tick"}, []int{0, 1},
			chainWant{1, 1, []string{"e2"}, 0, []string{"e0", "e1", "e2"}, nil, []string{"e2"}}},
		{"a duplicate of a stepped event", running("counter"), []string{"tick", "tick", "tick@e1", "tick"}, nil,
			chainWant{1, 3, []string{"e0", "e1", "e3"}, 0, []string{"e0", "e1", "e1", "e3"}, nil, []string{"e0"}}},
		{"stops at an action error", running("counter"), []string{"tick", "tick", "boom", "tick"}, nil,
			chainWant{1, 2, []string{"e0", "e1"}, 0, []string{"e0", "e1"}, []string{"e2"}, []string{"e0"}}},
		{"an action error first", running("counter"), []string{"boom", "tick"}, nil,
			chainWant{0, 0, nil, 0, nil, []string{"e0"}, []string{"e0"}}},
		{"goes on past a finish", running("counter"), []string{"tick", "finish", "tick"}, nil,
			chainWant{1, 2, []string{"e0", "e1", "e2"}, 0, []string{"e0", "e1", "e2"}, nil, []string{"e0"}}},
		{"suspended parks the first", &stead.Execution{ID: "x", DefinitionID: "counter", Status: stead.StatusSuspended},
			[]string{"tick", "tick"}, nil, chainWant{0, 0, nil, 0, nil, []string{"e0"}, []string{"e0"}}},
		{"missing execution drops all", nil, []string{"tick", "tick"}, nil,
			chainWant{0, 0, nil, 0, []string{"e0", "e1"}, nil, nil}},
		{"a traced execution steps once a commit", running("traced"), []string{"tick", "tick", "tick"}, nil,
			chainWant{1, 1, []string{"e0"}, 0, []string{"e0"}, nil, []string{"e0"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leases := make([]transport.Lease, len(tc.kinds))
			loaded := make([]stead.Loaded, len(tc.kinds))
			for i, k := range tc.kinds {
				ev := stead.Event{ID: "e" + string(rune('0'+i)), Kind: k}
				if kind, id, ok := strings.Cut(k, "@"); ok { // "tick@e1": a tick with the id e1
					ev.Kind, ev.ID = kind, id
				}
				if k == "emit" {
					ev.Data = json.RawMessage(`"y"`)
				}
				leases[i] = transport.Lease{Message: transport.Message{Seq: int64(i + 1), Group: "x", Event: ev}, Token: "t"}
				loaded[i] = stead.Loaded{Execution: tc.exe, Processed: slices.Contains(tc.processed, i)}
			}
			wants := tc.want
			for _, lost := range []bool{false, true} {
				clear(rec.at)
				ctx := context.Background()
				p := w.startChains(ctx, ctx, leases, loaded, nil).round(true)
				if len(p.items) != wants.items {
					t.Fatalf("%d items, want %d", len(p.items), wants.items)
				}
				results := make([]stead.CommitResult, len(p.items))
				if wants.items == 1 {
					it := p.items[0]
					var c counterCtx
					if err := json.Unmarshal(it.Execution.Context, &c); err != nil || c.N != wants.n {
						t.Fatalf("count %d (%v), want %d", c.N, err, wants.n)
					}
					if it.Execution.Version != 7 {
						t.Errorf("the item expects version %d, want the loaded 7", it.Execution.Version)
					}
					got := append([]string{it.Bundle.ProcessedEventID}, it.Bundle.AlsoProcessed...)
					if !slices.Equal(got, wants.processed) {
						t.Errorf("processed %v, want %v", got, wants.processed)
					}
					if tc.exe.DefinitionID == "counter" {
						// Each step ran at the version it would have had alone.
						for n, id := range wants.processed {
							if v, ok := rec.at[id]; !ok || v != 7+int64(n) {
								t.Errorf("%s stepped at version %d (%v), want %d", id, v, ok, 7+n)
							}
						}
					}
					if len(it.Bundle.Emits) != wants.emits {
						t.Errorf("%d emits, want %d", len(it.Bundle.Emits), wants.emits)
					}
					results[0] = stead.CommitResult{Committed: stead.Committed{Version: 8}}
					if lost {
						results[0] = stead.CommitResult{Err: &stead.ConflictError{ID: "x", Expected: 7, Found: 8}}
					}
				}
				ds := w.sortResults(leases, &p, results)
				acks, later := leaseIDs(p.acks), pendingIDs(p.later)
				wantAcks, wantLater := wants.acks, wants.later
				if lost {
					wantAcks, wantLater = dropped(wants), wants.lost
				}
				if !slices.Equal(acks, wantAcks) || !slices.Equal(later, wantLater) {
					t.Errorf("lost=%v: acked %v and nacked %v, want %v and %v", lost, acks, later, wantAcks, wantLater)
				}
				if !lost && wants.items == 1 {
					if len(ds) != 1 || 1+len(ds[0].also) != len(wants.processed) {
						t.Errorf("deliveries %+v, want one reporting %d events", ds, len(wants.processed))
					}
				}
			}
		})
	}
}

// chainWant is what a TestPlanChains case expects.
type chainWant struct {
	items     int
	n         int      // the count the item's execution holds
	processed []string // ProcessedEventID, then AlsoProcessed
	emits     int
	acks      []string // event ids acknowledged once the commit wins
	later     []string // event ids nacked once the commit wins
	lost      []string // event ids nacked when the commit is lost
}

// dropped is what a case acknowledges whether or not its commit wins: the messages dropped
// before its first step.
func dropped(w chainWant) []string {
	if w.items == 0 {
		return w.acks
	}
	var out []string
	for _, a := range w.acks {
		if a == w.processed[0] {
			break
		}
		out = append(out, a)
	}
	return out
}

func leaseIDs(ls []transport.Lease) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Event.ID)
	}
	return out
}

func pendingIDs(ps []pending) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.lease.Event.ID)
	}
	return out
}

// TestPlanStoppingHandsBack: once the worker is stopping, a batch's messages whose steps have not
// started are handed back at once (a nack without delay) instead of being stepped; a chain that
// stepped its first message hands back the rest after its commit.
func TestPlanStoppingHandsBack(t *testing.T) {
	t.Parallel()
	w := &Worker{cfg: Config{Machines: Machines{"counter": counter{}}, Clock: time.Now}}
	w.log = slog.New(slog.DiscardHandler)
	exe := &stead.Execution{ID: "x", DefinitionID: "counter", Status: stead.StatusRunning, Version: 3,
		Context: json.RawMessage(`{"n":0,"joined":0}`)}
	var leases []transport.Lease
	var loaded []stead.Loaded
	for i, g := range []string{"x", "y", "y"} {
		ev := stead.Event{ID: "e" + string(rune('0'+i)), Kind: "tick"}
		leases = append(leases, transport.Lease{Message: transport.Message{Seq: int64(i + 1), Group: g, Event: ev}, Token: "t"})
		e := *exe
		e.ID = g
		loaded = append(loaded, stead.Loaded{Execution: &e})
	}
	stopping, stop := context.WithCancel(context.Background())
	stop()
	p := w.startChains(stopping, context.Background(), leases, loaded, nil).round(true)
	if len(p.items) != 0 || len(p.acks) != 0 {
		t.Fatalf("a stopping worker stepped %d items and acked %d messages", len(p.items), len(p.acks))
	}
	var back []string
	for _, q := range p.later {
		if q.v != doResend {
			t.Errorf("%s settled by verdict %d, want a nack without delay", q.lease.Event.ID, q.v)
		}
		back = append(back, q.lease.Event.ID)
	}
	// y's second message stays with its group: the transaction's end hands it back in order.
	if want := []string{"e0", "e1"}; !slices.Equal(back, want) {
		t.Fatalf("handed back %v, want %v", back, want)
	}
}
