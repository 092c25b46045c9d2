package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/worker"
)

// The machines of TestConstructsEndToEnd: shop invokes payment (a selector whose action fails
// its first attempt and is retried on a durable timer) and fans out to one parcel per item, and
// defers "note" events while it waits for the payment.
const (
	e2eShop = `
id: shop
initial: paying
states:
  paying:
    defer: [note]
    invoke: {definition: payment, input: {amount: total}}
    done: [{outcome: success, target: shipping}, {target: failed}]
  shipping:
    on: {note: {actions: [noted]}}
    invoke: {definition: parcel, for_each: parcels, as: parcel}
    done: [{outcome: success, target: shipped}, {target: failed}]
  shipped: {final: success}
  failed: {final: failure}
`
	e2ePayment = `
id: payment
returns: [receipt, attempts]
initial: charging
states:
  charging:
    select: {action: charge, cases: {ok: paid}}
  paid: {final: success}
retry:
  charge: {attempts: 3, backoff: 1s}
`
	e2eParcel = `
id: parcel
returns: [tracking]
initial: packing
states:
  packing:
    select: {action: pack, cases: {ok: sent}}
  sent: {final: success}
`

	// e2eDepot fans out to crates that wait for a "deliver" each: children that are running
	// when the kill test kills its worker.
	e2eDepot = `
id: depot
initial: paying
states:
  paying:
    invoke: {definition: payment}
    done: [{outcome: success, target: loading}, {target: failed}]
  loading:
    invoke: {definition: crate, for_each: crates, as: crate}
    done: [{outcome: success, target: loaded}, {target: failed}]
  loaded: {final: success}
  failed: {final: failure}
`
	e2eCrate = `
id: crate
returns: [crate]
initial: waiting
states:
  waiting: {on: {deliver: delivered}}
  delivered: {final: success}
`
)

func constructMachines(t *testing.T) worker.Machines {
	t.Helper()
	m, err := newConstructMachines()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func newConstructMachines() (worker.Machines, error) {
	reg := chart.NewRegistry()
	reg.Action("noted", func(chart.ActionContext) (chart.ActionResult, error) {
		return chart.ActionResult{Set: map[string]any{"noted": true}}, nil
	})
	reg.Selector("charge", []string{"ok"}, func(a chart.ActionContext) (chart.ActionResult, error) {
		if a.Attempt < 2 {
			return chart.ActionResult{}, errors.New("gateway unavailable")
		}
		return chart.ActionResult{Label: "ok", Set: map[string]any{"receipt": "r-" + a.Key(), "attempts": a.Attempt}}, nil
	})
	reg.Selector("pack", []string{"ok"}, func(a chart.ActionContext) (chart.ActionResult, error) {
		return chart.ActionResult{Label: "ok", Set: map[string]any{"tracking": a.String("parcel") + "-T"}}, nil
	})
	machines := worker.Machines{}
	var defs []*chart.Definition
	for _, src := range []string{e2eShop, e2ePayment, e2eParcel, e2eDepot, e2eCrate} {
		def, err := chart.Parse("e2e.yaml", []byte(src))
		if err != nil {
			return nil, err
		}
		defs = append(defs, def)
		reg.Definition(def)
	}
	for _, def := range defs {
		eng, err := chart.NewEngine(def, reg)
		if err != nil {
			return nil, err
		}
		machines[eng.DefinitionID()] = eng
	}
	return machines, nil
}

// TestConstructsEndToEnd runs an invoked machine, a retried action, a deferred event and a
// fan-out through real workers on SQLite and PostgreSQL.
func TestConstructsEndToEnd(t *testing.T) {
	t.Parallel()
	for _, c := range backendCases {
		if c.name != "sqlite batched" && c.name != "postgres batched" && c.name != "postgres shared-tx batched" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b, _, _ := openCase(t, c)
			machines := constructMachines(t)
			clock := &testClock{base: time.Now()}
			ctx := context.Background()
			client := &worker.Client{Store: b.Store, Transport: b.Transport, Known: machines, Clock: clock.Now}
			const shops = 6
			for i := range shops {
				if _, err := client.Create(ctx, "shop", fmt.Sprintf("s%d", i), []byte(`{"total":10,"parcels":["a","b","c"]}`)); err != nil {
					t.Fatal(err)
				}
			}
			runFleet(t, b, c, machines, clock, 2)
			load := func(id string) *stead.Execution {
				exe, err := b.Store.Load(ctx, id)
				if err != nil {
					return nil
				}
				return exe
			}
			// Every payment child failed its first attempt and waits on its retry timer (the
			// clock stands still); the shops wait in paying, where notes are deferred.
			waitUntil(t, 60*time.Second, "every payment waits for its retry", func() bool {
				for i := range shops {
					p := load(fmt.Sprintf("s%d:paying:0", i))
					if p == nil || p.Timers[chart.RetryTimerPath].IsZero() {
						return false
					}
				}
				return true
			})
			for i := range shops {
				if _, err := client.Send(ctx, fmt.Sprintf("s%d", i), stead.Event{ID: fmt.Sprintf("note-%d", i), Kind: "note"}); err != nil {
					t.Fatal(err)
				}
			}
			waitUntil(t, 60*time.Second, "every note deferred", func() bool {
				for i := range shops {
					s := load(fmt.Sprintf("s%d", i))
					if s == nil || len(s.Deferred) != 1 {
						return false
					}
				}
				return true
			})
			clock.offset.Add(int64(2 * time.Second)) // past the retry backoff
			waitUntil(t, 60*time.Second, "every shop shipped", func() bool {
				for i := range shops {
					if s := load(fmt.Sprintf("s%d", i)); s == nil || !s.Status.Finished() {
						return false
					}
				}
				return true
			}, func() string {
				out := ""
				for i := range shops {
					s := load(fmt.Sprintf("s%d", i))
					out += fmt.Sprintf("%s %s %s %s children=%v\n", s.ID, s.Status, s.ActivePath, s.Context, s.Children)
					if p := load(s.ID + ":paying:0"); p != nil {
						out += fmt.Sprintf("  payment %s %s %q timers=%v seq=%v deferred=%d ctx=%s\n", p.Status, p.ActivePath, p.Error, p.Timers, p.InvokeSeq, len(p.Deferred), p.Context)
					}
				}
				return out
			})
			for i := range shops {
				id := fmt.Sprintf("s%d", i)
				s := load(id)
				var got struct {
					Noted    bool
					Attempts int
					Receipt  string
					Results  []struct{ Tracking string }
				}
				if err := json.Unmarshal(s.Context, &got); err != nil {
					t.Fatal(err)
				}
				if s.Status != stead.StatusDone || s.Outcome != chart.OutcomeSuccess || !got.Noted || got.Attempts != 2 ||
					got.Receipt == "" || len(got.Results) != 3 || got.Results[2].Tracking != "c-T" || len(s.Deferred) != 0 {
					t.Errorf("%s: %s/%s context %s deferred %v", id, s.Status, s.Outcome, s.Context, s.Deferred)
				}
				for cid := range s.Children {
					if ch := load(cid); ch == nil || ch.Status != stead.StatusDone || ch.ParentID != id {
						t.Errorf("%s: child %s: %+v", id, cid, ch)
					}
				}
				if p := load(id + ":paying:0"); p == nil || p.DefinitionID != "payment" || p.Status != stead.StatusDone {
					t.Errorf("%s: payment child %+v", id, p)
				}
				if tm, err := b.Store.Timers(ctx, id+":paying:0"); err != nil || len(tm) != 0 {
					t.Errorf("%s: payment timers left %v %v", id, tm, err)
				}
			}
		})
	}
}

// TestWorkerKilledWhileChildrenRun SIGKILLs a worker process while invoked children run (a
// fan-out of crates waiting for their delivery), delivers to the children with no worker up, and
// lets a second process finish: every depot joins its crates in order, on SQLite and PostgreSQL.
func TestWorkerKilledWhileChildrenRun(t *testing.T) {
	t.Parallel()
	for _, c := range []backendCase{{"sqlite", sqliteSpec, false, 8}, {"postgres", pgSpec, false, 8}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b, spec, schema := openCase(t, c)
			ctx := context.Background()
			machines := constructMachines(t)
			client := &worker.Client{Store: b.Store, Transport: b.Transport, Known: machines}
			const depots = 5
			for i := range depots {
				if _, err := client.Create(ctx, "depot", fmt.Sprintf("d%d", i), []byte(`{"crates":["x","y"]}`)); err != nil {
					t.Fatal(err)
				}
			}
			ledger := filepath.Join(t.TempDir(), "effects.db")
			first := startWorkerProcess(t, spec, schema, ledger, "first")
			crate := func(d, i int) string { return fmt.Sprintf("d%d:loading:0:%d", d, i) }
			waitUntil(t, 60*time.Second, "every crate runs", func() bool {
				for d := range depots {
					for i := range 2 {
						if exe, err := b.Store.Load(ctx, crate(d, i)); err != nil || exe.Status != stead.StatusRunning {
							return false
						}
					}
				}
				return true
			})
			if err := first.stop(t, syscall.SIGKILL); err == nil {
				t.Fatal("SIGKILLed worker exited cleanly")
			}
			for d := range depots {
				for i := range 2 {
					if _, err := client.Send(ctx, crate(d, i), stead.Event{ID: "deliver-" + crate(d, i), Kind: "deliver"}); err != nil {
						t.Fatal(err)
					}
				}
			}
			second := startWorkerProcess(t, spec, schema, ledger, "second")
			waitUntil(t, 90*time.Second, "every depot loaded", func() bool {
				for d := range depots {
					if exe, err := b.Store.Load(ctx, fmt.Sprintf("d%d", d)); err != nil || !exe.Status.Finished() {
						return false
					}
				}
				return true
			})
			if err := second.stop(t, syscall.SIGTERM); err != nil {
				t.Fatalf("worker did not exit cleanly on SIGTERM: %v", err)
			}
			for d := range depots {
				exe, err := b.Store.Load(ctx, fmt.Sprintf("d%d", d))
				if err != nil {
					t.Fatal(err)
				}
				var got struct{ Results []struct{ Crate string } }
				if err := json.Unmarshal(exe.Context, &got); err != nil {
					t.Fatal(err)
				}
				if exe.Outcome != chart.OutcomeSuccess || len(got.Results) != 2 || got.Results[0].Crate != "x" || got.Results[1].Crate != "y" {
					t.Errorf("d%d: %s/%s %s", d, exe.Status, exe.Outcome, exe.Context)
				}
			}
		})
	}
}
