// Command firstflow runs a purchase flow end to end on SQLite: a definition in YAML, its
// actions in Go, a worker that runs them, and a client that starts purchases, reports a
// delivery and waits for each purchase to finish. It is the program the stead README's "Your
// first flow" walks through.
//
//	go run .                  # a fresh database in a temporary directory
//	go run . -db purchases.db # or a file of your own, kept between runs
//
// The PostgreSQL lines sit beside the SQLite ones in open, for many workers on many hosts.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/sqlitetransport"
	"github.com/steadhq/stead/worker"
	// On PostgreSQL:
	// "github.com/steadhq/stead/pgdb"
	// "github.com/steadhq/stead/pgstore"
	// "github.com/steadhq/stead/transport/pgtransport"
)

//go:embed purchase.yaml
var purchaseYAML []byte

func main() {
	db := flag.String("db", "", "SQLite file (default: a new one in a temporary directory)")
	flag.Parse()
	if *db == "" {
		dir, err := os.MkdirTemp("", "firstflow")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
		*db = filepath.Join(dir, "stead.db")
	}
	if err := run(context.Background(), os.Stdout, *db); err != nil {
		log.Fatal(err)
	}
}

// backend is the store and transport of one database, and how to close them.
type backend struct {
	store *stead.Store
	tr    *transport.Transport
	close func()
}

// open opens the store and the transport on one SQLite file. The store keeps the executions,
// the transport delivers their events; sharing the file, they queue their writes on its one
// write gate.
func open(ctx context.Context, path string) (*backend, error) {
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: path})
	if err != nil {
		return nil, err
	}
	store, err := sqlitestore.New(ctx, db) // creates or migrates the schema
	if err != nil {
		db.Close()
		return nil, err
	}
	tr, err := sqlitetransport.New(ctx, db)
	if err != nil {
		store.Close()
		db.Close()
		return nil, err
	}
	// On PostgreSQL, many workers on many hosts share one database:
	//
	//	pool, err := pgdb.Open(ctx, "postgres://app@db:5432/app", pgdb.Config{})
	//	store, err := pgstore.New(ctx, pool, pgstore.WithSchema("stead"))
	//	tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema("stead"))
	//
	// and Client.Wait is woken by PostgreSQL's notifications instead of polling.
	return &backend{store: store, tr: tr, close: func() {
		tr.Close()
		store.Close()
		db.Close() // last: the store and the transport run on it
	}}, nil
}

// supplier stands for the supplier's ordering API: the first call of every order fails with a
// 503, as a real one does during a deploy. It remembers the orders it took by idempotency key,
// so that an order placed twice (a step run again after a crash) is placed once.
type supplier struct {
	calls  atomic.Int64
	mu     sync.Mutex // the worker runs steps of several executions at once
	orders map[string]string
}

func (s *supplier) place(key, item string, attempt int) (string, error) {
	s.calls.Add(1)
	if attempt == 1 {
		return "", errors.New("supplier: 503 Service Unavailable")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ref, ok := s.orders[key]; ok {
		return ref, nil
	}
	ref := fmt.Sprintf("PO-%d", len(s.orders)+1)
	s.orders[key] = ref
	return ref, nil
}

// registry holds the definition's actions. An action gets the execution's context and returns
// what to change in it (here through the setters) or a selector's label; a returned error is
// retried by the definition's policy.
func registry(sup *supplier) *chart.Registry {
	reg := chart.NewRegistry()
	// check_budget calls the budget service, which is slow. Actions run inside the worker's
	// step, before its commit: keep them well within the worker's lease (Config.Visibility,
	// 30 s), and hand work of minutes to a system of its own, reporting back with an event.
	reg.Selector("check_budget", []string{"within", "over"}, func(c chart.ActionContext) (chart.ActionResult, error) {
		time.Sleep(200 * time.Millisecond) // the budget service thinking
		if c.Float("amount") > 5000 {
			return chart.ActionResult{Label: "over"}, nil
		}
		return chart.ActionResult{Label: "within"}, nil
	})
	// place_order calls the supplier with the step's idempotency key, the same on every retry
	// and every replay, so that the supplier can tell a repeat from a new order.
	reg.Selector("place_order", []string{"placed"}, func(c chart.ActionContext) (chart.ActionResult, error) {
		ref, err := sup.place(c.Key(), c.String("item"), c.Attempt)
		if err != nil {
			return chart.ActionResult{}, err // retried: see retry in purchase.yaml
		}
		c.SetString("order_ref", ref)
		return chart.ActionResult{Label: "placed"}, nil
	})
	return reg
}

func run(ctx context.Context, out io.Writer, path string) error {
	def, err := chart.Parse("purchase.yaml", purchaseYAML) // or chart.LoadFile("purchase.yaml")
	if err != nil {
		return err
	}
	sup := &supplier{orders: map[string]string{}}
	eng, err := chart.NewEngine(def, registry(sup))
	if err != nil {
		return err
	}
	machines := worker.Machines{eng.DefinitionID(): eng}

	b, err := open(ctx, path)
	if err != nil {
		return err
	}
	defer b.close()

	// The worker runs steps until its context ends. OnFinish hears of every purchase it
	// finishes; a failed one is also a WARN line in the log (slog.Default()).
	w, err := worker.New(worker.Config{Store: b.store, Transport: b.tr, Machines: machines,
		OnFinish: func(exe *stead.Execution) {
			fmt.Fprintf(out, "finished: %s %s/%s\n", exe.ID, exe.Status, exe.Outcome)
		}})
	if err != nil {
		return err
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			fmt.Fprintln(out, "worker:", err)
		}
	}()

	// The client starts purchases and sends them events; Known lets it check the definition
	// and the context before anything is written.
	client := &worker.Client{Store: b.store, Transport: b.tr, Known: machines}
	if _, err := client.Create(ctx, "purchase", "laptop-1", []byte(`{"item":"laptop","amount":1200}`)); err != nil {
		return err
	}
	if _, err := client.Create(ctx, "purchase", "crane-1", []byte(`{"item":"crane","amount":250000}`)); err != nil {
		return err
	}

	// The crane is over budget: the purchase ends rejected without anyone's help.
	crane, err := client.Wait(ctx, "crane-1")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "crane-1: %s/%s\n", crane.Status, crane.Outcome)

	// The laptop waits for its delivery once ordered. Wait for that state by loading the
	// execution (a flow of your own might emit an event to your system instead).
	for {
		exe, err := b.store.Load(ctx, "laptop-1")
		if err != nil {
			return err
		}
		if exe.Status.Finished() {
			return fmt.Errorf("laptop-1 ended %s before its delivery: %s", exe.Status, exe.Error)
		}
		if exe.ActivePath == "awaiting_delivery" {
			var c struct {
				OrderRef string `json:"order_ref"`
			}
			if err := json.Unmarshal(exe.Context, &c); err != nil {
				return err
			}
			fmt.Fprintf(out, "laptop-1: ordered as %s after %d calls to the supplier\n", c.OrderRef, sup.calls.Load())
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	// The warehouse reports the delivery. The event id makes the send idempotent: sent twice,
	// it is applied once.
	if _, err := client.Send(ctx, "laptop-1", stead.Event{ID: "laptop-1-delivered", Kind: "delivered"}); err != nil {
		return err
	}
	laptop, err := client.Wait(ctx, "laptop-1")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "laptop-1: %s/%s\n", laptop.Status, laptop.Outcome)
	return nil
}
