package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/transport"
)

// Machine computes one step of an execution. It must not mutate exe; it returns the next state and
// the bundle of side effects that commit with it. *chart.Engine satisfies it.
type Machine interface {
	Step(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error)
}

// ContextMachine is a Machine that also takes a context for the actions of a step (their I/O),
// which the worker prefers: it cancels that context at the step's ActionTimeout and when it
// stops. *chart.Engine satisfies it (chart.ActionContext.Context).
type ContextMachine interface {
	Machine
	StepContext(ctx context.Context, exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error)
}

// Machines maps a definition id to the machine that runs it. A versioned definition is keyed
// by "<id>@<version>" (chart.Definition.VersionedID), so one map holds several versions at once:
// each execution runs on the version it recorded, and Resolve picks the newest for new ones.
type Machines map[string]Machine

// Resolve returns the DefinitionID a new execution of id starts on: id itself when it is a key
// (an exact or unversioned id), else the newest "<id>@<n>" key, else id unchanged.
func (m Machines) Resolve(id string) string {
	if _, ok := m[id]; ok {
		return id
	}
	best, newest := id, 0
	for k := range m {
		if base, v := chart.SplitVersion(k); base == id && v > newest {
			best, newest = k, v
		}
	}
	return best
}

// Defaults for Config. Eight loops of 128 drained the end-to-end backlog on PostgreSQL about 1.6
// times as fast as four of 64, at a lower server CPU cost per event (bench/results/speed.md).
const (
	DefaultConcurrency    = 8
	DefaultBatchSize      = 128
	DefaultBatchWait      = 2 * time.Millisecond
	DefaultGroupDepth     = 16
	DefaultVisibility     = 10 * time.Second
	DefaultRetryDelay     = time.Second
	DefaultSuspendRecheck = 5 * time.Second
	DefaultTimerInterval  = 250 * time.Millisecond
	DefaultRelayInterval  = 5 * time.Second
	DefaultRelayLease     = 30 * time.Second
	DefaultIdleWait       = time.Second
	DefaultShutdown       = 30 * time.Second
	DefaultActionTimeout  = time.Minute
	// relayPage is how many outbox rows, spawn intents or timers one relay claim takes.
	relayPage = 256
)

// Config configures a Worker. Store, Transport and Machines are required; every other zero value
// takes the default named after it.
type Config struct {
	Store     *stead.Store
	Transport *transport.Transport
	Machines  Machines

	// Name identifies the worker in leases and logs (default: host name and process id).
	Name string
	// Concurrency is how many claim loops run at once (default 8). Unbatched, it is the number of
	// steps in flight; batched, the number of batches in flight.
	Concurrency int
	// BatchSize is how many messages (one per execution, or up to GroupDepth with SharedTx) a
	// loop claims, loads, commits and acknowledges together (default 128). 1 turns batching off:
	// one message per transaction.
	BatchSize int
	// GroupDepth is, with SharedTx, how many queued messages of one execution a batch may take
	// (default 16; 1 takes one, as without SharedTx). The worker applies them in order, each to
	// the state the one before left, and commits them as one step of the execution: one load,
	// one update of the execution and one claim of its queue for all of them. They count
	// towards BatchSize. Without SharedTx a batch takes one message per execution.
	GroupDepth int
	// BatchWait bounds how long a loop holding a partial batch waits for more messages before it
	// processes what it has (default 2 ms; negative means never wait).
	BatchWait time.Duration
	// Visibility is the transport lease of a claimed message (default 10 s): a worker that dies
	// holding it delays that execution's next event by at most this long. A step that runs
	// longer keeps its lease alive (its message's lease is extended every Visibility/3, where
	// the transport implements transport.Extender), so Visibility need not cover the slowest
	// action; in a shared transaction, which holds its messages by itself, the steps of a batch
	// must end within Visibility/3.
	Visibility time.Duration
	// RetryDelay is how long a message waits before redelivery after a store, transport or engine
	// error (default 1 s).
	RetryDelay time.Duration
	// SuspendRecheck is how long a message for a suspended execution is parked (default 5 s).
	SuspendRecheck time.Duration
	// TimerInterval is how often due timers are swept (default 250 ms; negative disables the sweep).
	TimerInterval time.Duration
	// RelayInterval is how often leftover outbox rows and spawn intents are delivered (default 5 s;
	// negative disables the periodic relay, the one at start still runs).
	RelayInterval time.Duration
	// RelayLease is the lease the relay takes on outbox rows and spawn intents (default 30 s).
	RelayLease time.Duration
	// IdleWait is how long an idle loop waits for the transport's wake-up before it claims again
	// (default 1 s).
	IdleWait time.Duration
	// ShutdownTimeout bounds how long in-flight steps may take to finish once Run's context is
	// done (default 30 s). Work cut off by it is redelivered after Visibility.
	ShutdownTimeout time.Duration
	// PriorityShare is the share of claims (0 to 1, default 0) that first ask the transport only
	// for executions of priority PriorityThreshold or more, and fall back to any priority when
	// none of those is waiting. At 0 a priority does not change the order of service; at 1
	// executions at or above the threshold are always served first, and keep the others waiting
	// for as long as they have events.
	PriorityShare float64
	// PriorityThreshold is the lowest priority PriorityShare favours (1..stead.MaxPriority,
	// default 1).
	PriorityThreshold int
	// SharedTx, when set, runs the claim, load, commit, publish and acknowledgement of each batch
	// in one transaction of the database the store and the transport share (pgtx.New, for
	// pgstore and pgtransport on one pool): one commit instead of three, and a message is
	// acknowledged if and only if its step commits. A transaction that claimed a single message
	// sends its commit, emits and ack in one round trip and commits only if the step won its
	// compare-and-swap; a lost one rolls back, which hands the message back at once. Each such
	// transaction gets Visibility/3 and the database ends it when its worker hangs (see
	// SharedDB.Begin), so a hung worker holds its executions for at most Visibility here too; the
	// steps of a batch must finish well within Visibility/3.
	SharedTx SharedDB
	// Finisher, when set and SharedTx is not, ends each round of a batch in one transaction of
	// the database that holds the store and the transport (sqlitetx.New, for sqlitestore and
	// sqlitetransport on one SQLite file): the commit of the steps that ended, the publish of
	// what they emitted (no outbox row, no relay hop) and the acknowledgement of their messages,
	// one commit instead of three or more. A message is acknowledged if and only if its step
	// commits, and one whose step lost its compare-and-swap is handed back in the same
	// transaction. The claim and the load stay calls of their own, so the transaction never
	// spans the steps' actions (see Finisher).
	Finisher Finisher
	// Clock returns the current time (default time.Now). Tests inject one to fire timers.
	Clock func() time.Time
	// Logger receives structured logs (default: slog.Default()). A failed execution is a WARN
	// line naming its execution, definition, state, event and error, written once, by the worker
	// that committed the failing step; slog.New(slog.DiscardHandler) silences the worker.
	Logger *slog.Logger
	// OnCommit, when set, is called after each step commits (from the worker's goroutines; it must
	// be fast and safe for concurrent use). Benchmarks use it to measure latency.
	OnCommit func(exe *stead.Execution, ev stead.Event, committedAt time.Time)

	// Observer, when set, watches the worker's batches, steps, calls and timers: otelstead.New
	// makes the OpenTelemetry one (spans, metrics and gauges). Nil: nothing is watched, and
	// nothing is paid for it.
	Observer Observer

	// OnFinish, when set, is called once for each execution that a step this worker committed
	// finished: done, cancelled or failed (see Client.Wait for why failed counts). Only the
	// worker that committed the finishing step calls it, after the commit and before what the
	// step emitted is delivered (unless the commit's transaction published it: SharedTx,
	// Finisher), from the worker's goroutines: it must be fast and safe for
	// concurrent use. exe is its own copy. A crash between the commit and the call loses the
	// call, so OnFinish suits notifications and metrics; what must not be lost reads the store
	// (Client.Wait, or a listing of finished executions).
	OnFinish func(exe *stead.Execution)

	// Steps: how many run at once, and for how long.

	// MaxWorkers bounds how many steps the worker runs at once, across all its claim loops
	// (default Concurrency × BatchSize, 1,024 at the defaults: what the loops can hold, so that
	// the bound never cuts a batch of quick steps short — at 100 a batch of 8 loops averaged
	// about 20 messages instead of 128, and paid its round trips for those). Steps of different executions run side by side, each on its own goroutine;
	// the steps of one execution run in order. A loop claims no more messages than there are
	// free places, so a claimed message starts at once instead of waiting behind slow actions,
	// and what this worker cannot start stays claimable by another. A place is held from the
	// claim until the message's step has run.
	MaxWorkers int
	// ActionTimeout is the deadline of one event's step: the context its actions get
	// (chart.ActionContext.Context, through ContextMachine) is cancelled once it passes
	// (default 1 min; negative means none). The context is also cancelled when the worker stops
	// and ShutdownTimeout has passed, and, in a shared transaction, at the transaction's own
	// deadline (Visibility/3).
	ActionTimeout time.Duration
}

func (c Config) withDefaults() (Config, error) {
	if c.Store == nil {
		return c, errors.New("worker: Config.Store is nil")
	}
	if c.Transport == nil {
		return c, errors.New("worker: Config.Transport is nil")
	}
	if len(c.Machines) == 0 {
		return c, errors.New("worker: Config.Machines is empty")
	}
	for id, m := range c.Machines {
		if m == nil {
			return c, fmt.Errorf("worker: machine for definition %q is nil", id)
		}
	}
	if c.Concurrency < 0 || c.BatchSize < 0 || c.BatchSize > stead.MaxBatch {
		return c, fmt.Errorf("worker: concurrency %d or batch size %d out of range (batch at most %d)",
			c.Concurrency, c.BatchSize, stead.MaxBatch)
	}
	if c.GroupDepth < 0 || c.GroupDepth > stead.MaxBatch {
		return c, fmt.Errorf("worker: group depth %d outside 1..%d", c.GroupDepth, stead.MaxBatch)
	}
	if !(c.PriorityShare >= 0 && c.PriorityShare <= 1) { // written so that NaN fails too
		return c, fmt.Errorf("worker: priority share %v is not between 0 and 1", c.PriorityShare)
	}
	if c.PriorityThreshold < 0 || c.PriorityThreshold > stead.MaxPriority {
		return c, fmt.Errorf("worker: priority threshold %d outside 1..%d", c.PriorityThreshold, stead.MaxPriority)
	}
	if c.PriorityThreshold == 0 {
		c.PriorityThreshold = 1
	}
	if c.Name == "" {
		host, _ := os.Hostname()
		c.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.GroupDepth == 0 {
		c.GroupDepth = DefaultGroupDepth
	}
	def(&c.BatchWait, DefaultBatchWait)
	def(&c.Visibility, DefaultVisibility)
	def(&c.RetryDelay, DefaultRetryDelay)
	def(&c.SuspendRecheck, DefaultSuspendRecheck)
	def(&c.TimerInterval, DefaultTimerInterval)
	def(&c.RelayInterval, DefaultRelayInterval)
	def(&c.RelayLease, DefaultRelayLease)
	def(&c.IdleWait, DefaultIdleWait)
	def(&c.ShutdownTimeout, DefaultShutdown)
	if c.MaxWorkers < 0 {
		return c, fmt.Errorf("worker: max workers %d is negative", c.MaxWorkers)
	}
	if c.MaxWorkers == 0 {
		c.MaxWorkers = c.Concurrency * c.BatchSize
	}
	def(&c.ActionTimeout, DefaultActionTimeout)
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
