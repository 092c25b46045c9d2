package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/steadhq/stead/schedule"
	"log/slog"
	"maps"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/transport"
)

// Client is the sender side: it creates executions and sends them events. The zero value is not
// usable; set Store and Transport. A Client is safe for concurrent use.
type Client struct {
	Store     *stead.Store
	Transport *transport.Transport
	// Known, when set, lists the definitions Create accepts (an unknown one is ErrInvalid), and
	// holds the machines that Control's reset, set-state and retry run (as Controllers) and that
	// start the children those commands spawn.
	Known Machines
	// Clock stamps created executions and events (default time.Now).
	Clock func() time.Time
	// Logger receives warnings about deliveries left to the relay and about executions a
	// command failed (default: slog.Default()).
	Logger *slog.Logger
	// Sender, when set, is what Send publishes through: pgtx.New of Store and Transport checks
	// that the execution exists and takes its priority in the publish's own statement. Without
	// it Send loads the execution first (see Send). A Sender that is also a Creator (pgtx.DB is)
	// commits Create's executions and publishes their starts in one transaction.
	Sender Sender
	// Stamper, when set, gives what Send and Create send the trace context of their ctx
	// (otelstead.New's Observer is one): the steps they cause join the caller's trace. Nil: an
	// event carries only the Trace it is given.
	Stamper Stamper
	// WaitPoll is the longest pause between two loads of Wait on a backend that cannot notify
	// (default DefaultWaitPoll, a second).
	WaitPoll time.Duration
}

// ContextPreparer is a Machine that checks and completes the context an execution is created
// with (chart.Engine does, for a definition that declares its context keys). Create calls it for
// the machines Known holds: a context it refuses is refused before anything is written.
type ContextPreparer interface {
	PrepareContext(ctx json.RawMessage) (json.RawMessage, error)
}

// NewExecution describes an execution for Create and CreateBatch.
type NewExecution struct {
	DefinitionID string
	ID           string
	Context      json.RawMessage // a JSON object, or nil
	Priority     int
	// Attributes are the execution's searchable labels from its first commit on (see
	// stead.Execution.Attributes); checked like the rest, they refuse the batch when invalid.
	Attributes map[string]stead.AttrValue
}

func (c *Client) now() time.Time {
	if c.Clock != nil {
		return c.Clock()
	}
	return time.Now()
}

func (c *Client) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

// Create stores a new pending execution and starts it. The start event commits in the outbox
// together with the record, so it cannot be lost: Create then publishes it and acknowledges the
// outbox row.
//
// If that publish fails, the execution exists and will start — a worker's relay publishes the
// start, and a worker that receives another event for the execution first applies the start
// before it — but Create says so: it returns the execution together with an error wrapping the
// publish's (see CreateBatch). An id that is taken is ErrAlreadyExists; when the execution under
// that id has not started yet (a retried Create whose first answer was lost), Create publishes its
// start again before returning the error, so a retry never leaves the start to the relay. The
// start event carries the trace context of the span in ctx, if any.
func (c *Client) Create(ctx context.Context, definitionID, id string, data json.RawMessage) (*stead.Execution, error) {
	exes, err := c.CreateBatch(ctx, []NewExecution{{DefinitionID: definitionID, ID: id, Context: data}})
	if len(exes) == 0 {
		return nil, err
	}
	return exes[0], err
}

// CreateBatch is Create for many executions (at most stead.MaxBatch) in one store transaction and
// one publish. Every input is checked first: one invalid item (or an unknown definition) refuses
// the whole batch and nothing is written. Then each execution is created on its own: one whose id
// is taken is not created, and CreateBatch returns the executions it did create (in input order)
// together with an error joining one ErrAlreadyExists per taken id. The created ones are started
// whatever happened to the others. A taken id whose execution is still pending gets its start
// published again (its creator's publish may have failed, or its answer been lost).
//
// When the publish of the start events fails, CreateBatch returns the executions it created (they
// are durable and will start: see Create) with an error that wraps the publish's error and
// ErrStartDeferred, so that a caller treating every error as "not created" retries, and its retry
// (ErrAlreadyExists) publishes the starts again.
func (c *Client) CreateBatch(ctx context.Context, news []NewExecution) ([]*stead.Execution, error) {
	if len(news) == 0 || len(news) > stead.MaxBatch {
		return nil, check.Invalidf("create batch of %d executions: want 1..%d", len(news), stead.MaxBatch)
	}
	now := c.now()
	items := make([]stead.CommitItem, len(news))
	seen := make(map[string]bool, len(news))
	for i, n := range news {
		if c.Known != nil {
			n.DefinitionID = c.Known.Resolve(n.DefinitionID) // the newest version of an unversioned id
		}
		if c.Known != nil && c.Known[n.DefinitionID] == nil {
			return nil, check.Invalidf("unknown definition %q", n.DefinitionID)
		}
		if p, ok := c.Known[n.DefinitionID].(ContextPreparer); ok {
			prepared, err := p.PrepareContext(n.Context)
			if err != nil {
				return nil, fmt.Errorf("create %q: %w", n.ID, err)
			}
			n.Context = prepared
		}
		if seen[n.ID] {
			return nil, check.Invalidf("execution %q appears twice in the batch", n.ID)
		}
		seen[n.ID] = true
		exe := &stead.Execution{
			ID: n.ID, DefinitionID: n.DefinitionID, Status: stead.StatusPending,
			Context: n.Context, Priority: n.Priority, CreatedAt: now, UpdatedAt: now,
			Attributes: maps.Clone(n.Attributes),
		}
		start := c.stamp(ctx, stead.Event{ID: StartEventID(n.ID), Kind: chart.KindStart, CreatedAt: now})
		items[i] = stead.CommitItem{Execution: exe, Bundle: stead.Bundle{Emits: []stead.Emit{{Target: n.ID, Event: start}}}}
		if _, err := stead.PrepareWrite(exe, items[i].Bundle); err != nil {
			return nil, fmt.Errorf("create %q: %w", n.ID, err)
		}
	}
	creator, together := c.Sender.(Creator)
	var results []stead.CommitResult
	if together {
		flows := make([]transport.Flow, len(items))
		for i := range items {
			flows[i] = flowOf(c.Known, items[i].Execution)
		}
		var err error
		if results, err = creator.Create(ctx, items, flows); err != nil {
			return nil, err
		}
	} else if len(items) == 1 {
		done, err := c.Store.Commit(ctx, items[0].Execution, items[0].Bundle)
		if err != nil && !errors.Is(err, stead.ErrConflict) {
			return nil, err
		}
		results = []stead.CommitResult{{Committed: done, Err: err}}
	} else {
		var err error
		if results, err = c.Store.CommitBatch(ctx, items); err != nil {
			return nil, err
		}
	}
	var taken []error
	var out []transport.Outgoing
	var seqs []int64
	var exes []*stead.Execution
	for i, r := range results {
		if r.Err != nil {
			if !errors.Is(r.Err, stead.ErrConflict) {
				return nil, r.Err // checked above: not reachable with a conforming store
			}
			taken = append(taken, fmt.Errorf("%w: execution %q", stead.ErrAlreadyExists, news[i].ID))
			continue
		}
		exe := items[i].Execution
		exe.Version = r.Version
		exes = append(exes, exe)
		if together {
			continue // its start was published with it
		}
		out = append(out, transport.Outgoing{Group: exe.ID, Event: items[i].Bundle.Emits[0].Event, Priority: exe.Priority, Flow: flowOf(c.Known, exe)})
		seqs = append(seqs, r.Seqs...)
	}
	if len(taken) > 0 {
		// Publishing a start twice is harmless: the worker drops the second as processed.
		out = append(out, c.pendingStarts(ctx, news, results)...)
	}
	if len(out) > 0 {
		if err := c.Transport.PublishBatch(ctx, out); err != nil {
			c.logger().Warn("start events left in the outbox for the relay", slog.Int("count", len(out)), slog.Any("err", err))
			if len(exes) > 0 {
				taken = append(taken, fmt.Errorf("%w: %d created, their start left to a worker's relay: %w",
					ErrStartDeferred, len(exes), err))
			}
		} else if len(seqs) == 0 {
			// Only the pending starts of taken ids: their outbox rows are the relay's to ack.
		} else if err := c.Store.AckOutbox(ctx, seqs); err != nil {
			// A later relay publishes them again; the worker drops the duplicates as processed.
			c.logger().Warn("ack of start events failed", slog.Any("err", err))
		}
	}
	return exes, errors.Join(taken...)
}

// ErrStartDeferred is joined to the error of a Create or CreateBatch whose executions were created
// but whose start events could not be published: they start once a worker's relay publishes them
// (within Config.RelayInterval of a worker running), or as soon as another event reaches them.
// Retrying the Create publishes them again.
var ErrStartDeferred = errors.New("worker: start deferred to the relay")

// pendingStarts returns the start events to publish again for the ids of news that were taken
// (results[i].Err set) by executions that have not started: a Create retried after its first
// answer was lost, or after its publish failed. A load that fails leaves that start to the relay.
func (c *Client) pendingStarts(ctx context.Context, news []NewExecution, results []stead.CommitResult) []transport.Outgoing {
	var out []transport.Outgoing
	for i, r := range results {
		if r.Err == nil {
			continue
		}
		exe, err := c.Store.Load(ctx, news[i].ID)
		if err != nil || exe.Status != stead.StatusPending {
			continue
		}
		if _, retrying := exe.Timers[chart.RetryTimerPath]; retrying {
			continue // its start was applied and failed; the retry timer re-applies it
		}
		start := c.stamp(ctx, stead.Event{ID: StartEventID(exe.ID), Kind: chart.KindStart, CreatedAt: exe.CreatedAt})
		out = append(out, transport.Outgoing{Group: exe.ID, Event: start, Priority: exe.Priority, Flow: flowOf(c.Known, exe)})
	}
	return out
}

// Creator commits new executions and publishes their start events in one transaction of the
// database that holds both the store and the transport: the items are those CreateBatch builds
// (a pending execution, its start event as its one emit), and the results are CommitBatch's,
// an id already taken being its result's ErrConflict. A Client whose Sender is also a Creator
// (pgtx.DB) creates through it: one commit a batch instead of three (the commit, the publish of
// the starts, the outbox's ack), and no execution exists without its start queued.
type Creator interface {
	// Create commits items and publishes each created one's start with flows[i] (its
	// definition's limit, see chart.Limit).
	Create(ctx context.Context, items []stead.CommitItem, flows []transport.Flow) ([]stead.CommitResult, error)
}

// Sender publishes an event to an execution at the execution's own priority, and refuses an
// execution that does not exist, in one round trip: a backend whose transport can read the
// store's records (the same database) does both in the publish's statement. pgtx.DB is one.
type Sender interface {
	// Send publishes ev to execution id's queue at the execution's priority, or publishes
	// nothing and returns an error wrapping stead.ErrNotFound when the execution does not exist.
	// ev is checked as Transport.Publish checks it.
	Send(ctx context.Context, id string, ev stead.Event) error
}

// Send publishes ev to the execution id, at the execution's priority. An empty ev.ID gets a
// fresh random one; reuse an id to make a retried send idempotent. The start event is not sent
// this way (Create sends it), nor are the control kinds (Control applies them). A missing
// execution is ErrNotFound, and nothing is published. The event carries the trace context of
// ctx, if any (see Stamper), unless it carries one already: the step it causes joins
// the caller's trace.
//
// With Sender set (pgtx on PostgreSQL, store and transport on one pool), the publish itself checks
// that the execution exists and takes its priority, in one round trip. Without it, Send loads
// the execution first, for its priority (a transport knows a queue's priority only while the
// queue holds messages) and to refuse a missing one: a second call, cheap on SQLite and memory.
func (c *Client) Send(ctx context.Context, id string, ev stead.Event) (stead.Event, error) {
	if err := check.ID("execution id", id); err != nil {
		return ev, err
	}
	if ev.Kind == chart.KindStart {
		return ev, check.Invalidf("send %q: the start event is sent by Create", id)
	}
	if chart.IsControl(ev.Kind) {
		// A command queued behind a parked queue would wait for ever: Control applies it at once.
		return ev, check.Invalidf("send %q: %s is an operator's command: use Client.Control", id, ev.Kind)
	}
	if chart.IsReserved(ev.Kind) {
		return ev, check.Invalidf("send %q: %s is the engine's own kind: no definition takes it from outside", id, ev.Kind)
	}
	if ev.ID == "" {
		ev.ID = NewEventID()
	}
	if err := ev.Validate(); err != nil {
		return ev, err
	}
	if ev.CreatedAt.IsZero() {
		ev.CreatedAt = c.now()
	}
	ev = c.stamp(ctx, ev)
	if c.Sender != nil {
		return ev, c.Sender.Send(ctx, id, ev)
	}
	exe, err := c.Store.Load(ctx, id)
	if err != nil {
		return ev, err
	}
	return ev, c.Transport.Publish(ctx, id, ev, exe.Priority)
}

// NewEventID returns a random event id.
func NewEventID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "ev-" + hex.EncodeToString(b[:])
}

// stamp returns ev carrying the trace context of ctx, unless it carries one already.
func (c *Client) stamp(ctx context.Context, ev stead.Event) stead.Event {
	if ev.Trace == "" && c.Stamper != nil {
		ev.Trace = c.Stamper.Trace(ctx)
	}
	return ev
}

// Schedules returns the schedules kept in the client's store (package schedule), to create,
// update, pause, resume and delete at runtime; schedworker.Runner fires them. A store whose
// backend keeps no schedules is an error wrapping stead.ErrInvalid.
func (c *Client) Schedules() (*schedule.Store, error) { return schedule.For(c.Store) }
