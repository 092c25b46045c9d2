package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/worker"
	"github.com/steadhq/stead/worker/pgtx"
)

// DefinitionID is the drill's statechart.
const DefinitionID = "chaos"

// TimerDelay is how long after an "arm" the drill's timer is due.
const TimerDelay = 300 * time.Millisecond

// definition: "work" is counted in the context (n) and recorded in the ledger, in either state;
// "arm" moves a working execution to waiting, whose timer brings it back after TimerDelay.
func definition() (*chart.Definition, error) {
	b := chart.New(DefinitionID).Initial("working")
	w := b.State("working")
	w.On("work", "").Do("work")
	w.On("arm", "waiting")
	wt := b.State("waiting").Entry("armed")
	wt.On("work", "").Do("work")
	wt.After(TimerDelay, "working").Do("fired")
	return b.Definition()
}

// Machines returns the drill's machine, recording its effects in ledger as worker name.
func Machines(ledger *Ledger, name string) (worker.Machines, error) {
	def, err := definition()
	if err != nil {
		return nil, err
	}
	reg := chart.NewRegistry().
		Action("work", func(c chart.ActionContext) (chart.ActionResult, error) {
			if err := ledger.Record(c.Key(), KindWork, c.ExecutionID, c.Event.ID, name, time.Time{}); err != nil {
				return chart.ActionResult{}, err
			}
			c.SetFloat("n", c.Float("n")+1)
			return chart.ActionResult{}, nil
		}).
		Action("armed", func(c chart.ActionContext) (chart.ActionResult, error) {
			return chart.ActionResult{}, ledger.Record(c.Key(), KindArmed, c.ExecutionID, c.Event.ID, name, time.Time{})
		}).
		Action("fired", func(c chart.ActionContext) (chart.ActionResult, error) {
			var due struct {
				FireAt time.Time `json:"fire_at"`
			}
			if err := c.DecodeEvent(&due); err != nil || due.FireAt.IsZero() {
				return chart.ActionResult{}, fmt.Errorf("timeout event without its due time: %s (%v)", c.Event.Data, err)
			}
			return chart.ActionResult{}, ledger.Record(c.Key(), KindFired, c.ExecutionID, c.Event.ID, name, due.FireAt)
		})
	e, err := chart.NewEngine(def, reg)
	if err != nil {
		return nil, err
	}
	return worker.Machines{DefinitionID: e}, nil
}

// WorkerConfig is one worker process of the drill.
type WorkerConfig struct {
	URL, Schema, Ledger, Name string
	Shared                    bool // the shared-transaction mode (pgtx)
	Visibility                time.Duration
	Logger                    *slog.Logger
}

// RunWorker runs one drill worker until ctx is done: pgstore and pgtransport on one pool, the
// batched or the shared-transaction mode, every setting but the lease at its default (the
// recovery figures are those of a default worker).
func RunWorker(ctx context.Context, c WorkerConfig) error {
	ledger, err := OpenLedger(c.Ledger)
	if err != nil {
		return err
	}
	defer ledger.Close()
	machines, err := Machines(ledger, c.Name)
	if err != nil {
		return err
	}
	pool, err := pgdb.Open(ctx, c.URL, pgdb.Config{MaxConns: 12, ConnectAttempts: 120, ConnectDelay: 250 * time.Millisecond})
	if err != nil {
		return err
	}
	defer pool.Close()
	store, err := pgstore.New(ctx, pool, pgstore.WithSchema(c.Schema))
	if err != nil {
		return err
	}
	defer store.Close()
	tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema(c.Schema), pgtransport.WithLogger(c.Logger))
	if err != nil {
		return err
	}
	defer tr.Close()
	var shared worker.SharedDB
	if c.Shared {
		if shared, err = pgtx.New(store, tr); err != nil {
			return err
		}
	}
	w, err := worker.New(worker.Config{
		Store: store, Transport: tr, Machines: machines, Name: c.Name, SharedTx: shared,
		Concurrency: 4, BatchSize: 16, Visibility: c.Visibility, RelayInterval: time.Second,
		Logger: c.Logger,
	})
	if err != nil {
		return err
	}
	return w.Run(ctx)
}
