package bulk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/retention"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/worker"
)

// Event kinds and paths of a job's own steps.
const (
	// KindPage applies the next page of a job that has no rate limit: each page emits it to the
	// job itself, through the outbox.
	KindPage = "stead.bulk.page"
	// TimerPath is the path of the durable timer a rate-limited job waits on between pages. It
	// holds '@', so it is never a state's path.
	TimerPath = "@bulk"
)

// Options tune a Machine.
type Options struct {
	// Concurrency is how many targets of a page are applied at once (default 8).
	Concurrency int
	// StepTimeout bounds the reads and writes of one page (default 5 s). A page that does not
	// finish in time fails the step, which the worker retries; what it applied stays applied and
	// counts as done when the page runs again. Keep it, and so the page size, well under the
	// worker's Visibility (a third of it with SharedTx, whose transaction waits for the step).
	StepTimeout time.Duration
	// Archive, when set, sees each tree a purge job deletes first and can veto it (a refusal).
	Archive retention.Archiver
}

// Machine runs bulk jobs: register it in the workers' machines under DefinitionID (Register
// does), with a client on the same store and transport whose Known holds the machines the
// targets run on (reset, set-state and retry need them).
//
// A step applies one page of targets through the client (the reads and writes happen inside
// the step, as an action's would), then commits the job's progress and listing cursor with the
// event that asks for the next page: an event to itself, or a durable timer when the job is
// rate-limited. A step whose commit is lost (a crash, a lost compare-and-swap, a timeout) is run
// again from the last committed cursor: the targets it had applied have the job's command id as
// processed and change nothing again.
type Machine struct {
	client *worker.Client
	opts   Options
}

// New returns the Machine that runs bulk jobs with c.
func New(c *worker.Client, opts Options) *Machine {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	if opts.StepTimeout <= 0 {
		opts.StepTimeout = 5 * time.Second
	}
	return &Machine{client: c, opts: opts}
}

// Register adds the bulk machine to machines, with a client on store and tr that knows
// machines (so that reset, set-state and retry jobs reach the definitions their targets run on).
// Register it in every worker: one without it hands a job's events back (no machine for the
// definition) to be retried after its RetryDelay, by itself or by a worker that has it.
func Register(machines worker.Machines, store *stead.Store, tr *transport.Transport, opts Options) {
	machines[DefinitionID] = New(&worker.Client{Store: store, Transport: tr, Known: machines}, opts)
}

// PrepareContext checks the context a job is created with (worker.ContextPreparer): a spec that
// cannot run is ErrInvalid, and nothing is written.
func (m *Machine) PrepareContext(raw json.RawMessage) (json.RawMessage, error) {
	st, err := decodeState(raw)
	if err != nil {
		return nil, err
	}
	if err := st.Spec.check(); err != nil {
		return nil, err
	}
	return raw, nil
}

// Step applies ev to the job exe. The start and the event the last step asked for apply a page;
// the cancel's own event disarms the job's timer (the worker ends the cancel); every other event
// changes nothing.
func (m *Machine) Step(exe *stead.Execution, ev stead.Event, now time.Time) (*stead.Execution, stead.Bundle, error) {
	next := exe.Clone()
	b := stead.Bundle{ProcessedEventID: ev.ID}
	st, err := decodeState(exe.Context)
	if err != nil {
		// Nothing can run this job: fail it, which an operator's cancel then ends.
		if !exe.Status.Finished() {
			next.Status, next.Outcome, next.FinishedAt = stead.StatusFailed, "bad context", now
		}
		return next, b, nil
	}
	switch {
	case ev.Kind == chart.KindCancel:
		if _, armed := exe.Timers[TimerPath]; armed {
			b.Timers = []stead.TimerOp{{Action: stead.TimerCancel, Path: TimerPath}}
		}
		delete(next.Timers, TimerPath)
		return next, b, nil
	case exe.Status.Finished() || exe.Status == stead.StatusCancelling:
		return next, b, nil
	case ev.Kind == chart.KindStart && exe.Status == stead.StatusPending:
		next.Status, next.ActivePath = stead.StatusRunning, "applying"
	case st.Wake != "" && ev.ID == st.Wake && exe.Status == stead.StatusRunning:
	default:
		return next, b, nil
	}
	if err := m.page(&st, next, &b, now); err != nil {
		return nil, b, err
	}
	if next.Context, err = json.Marshal(st); err != nil {
		return nil, b, fmt.Errorf("bulk: encode job %q: %w", exe.ID, err)
	}
	return next, b, nil
}

// page applies the targets the step before listed (st.Next), lists the next page, and records
// in st, next and b what it did and what comes next: the event or the timer that asks for the
// next step, or the end of the job.
func (m *Machine) page(st *state, next *stead.Execution, b *stead.Bundle, now time.Time) error {
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.StepTimeout)
	defer cancel()
	results := make([]error, len(st.Next))
	repeats := make([]bool, len(st.Next))
	sem := make(chan struct{}, m.opts.Concurrency)
	var wg sync.WaitGroup
	for i, id := range st.Next {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			repeats[i], results[i] = m.apply(ctx, next.ID, &st.Spec, id, now)
		})
	}
	wg.Wait()
	p := &st.Progress
	for i, err := range results {
		switch {
		case err == nil:
			p.Done++
			if repeats[i] {
				p.Repeats++
			}
		case errors.Is(err, stead.ErrInvalid) || errors.Is(err, stead.ErrNotFound):
			p.refuse(st.Next[i], reason(err))
		default:
			// Retried by the worker: the step runs again on the same targets, and what this run
			// applied counts as done then (a repeat).
			return fmt.Errorf("bulk: job %q: %s %q: %w", next.ID, st.Spec.Op, st.Next[i], err)
		}
	}
	p.Remaining = p.remaining()
	applied := len(st.Next)
	if applied > 0 {
		p.Pages++
	}
	st.Next = nil
	if !st.Listed {
		f := st.Spec.Filter
		f.Limit, f.Cursor = st.Spec.pageSize(), st.Cursor
		pg, err := m.client.Store.List(ctx, f)
		if err != nil {
			return fmt.Errorf("bulk: job %q: list targets: %w", next.ID, err)
		}
		for _, it := range pg.Items {
			if it.DefinitionID != DefinitionID { // a job never acts on jobs
				st.Next = append(st.Next, it.ID)
			}
		}
		st.Cursor, st.Listed = pg.NextCursor, pg.NextCursor == ""
	}
	if len(st.Next) == 0 && st.Listed {
		next.Status, next.FinishedAt, next.ActivePath = stead.StatusDone, now, ""
		p.Remaining = 0
		next.Outcome = OutcomeSuccess
		if p.Refused > 0 {
			next.Outcome = OutcomeRefused
		}
		st.Wake, st.Cursor = "", ""
		if _, armed := next.Timers[TimerPath]; armed {
			b.Timers = []stead.TimerOp{{Action: stead.TimerCancel, Path: TimerPath}}
			delete(next.Timers, TimerPath)
		}
		return nil
	}
	if st.Spec.Rate <= 0 || applied == 0 {
		st.Wake = next.ID + ":page:" + strconv.FormatInt(int64(next.Version)+1, 10)
		b.Emits = []stead.Emit{{Target: next.ID, Event: stead.Event{ID: st.Wake, Kind: KindPage, CreatedAt: now}}}
		return nil
	}
	wait := time.Duration(float64(applied) / st.Spec.Rate * float64(time.Second))
	at := now.Add(wait).UTC().Truncate(time.Microsecond)
	b.Timers = []stead.TimerOp{{Action: stead.TimerSchedule, Path: TimerPath, FireAt: at}}
	if next.Timers == nil {
		next.Timers = map[string]time.Time{}
	}
	next.Timers[TimerPath] = at
	st.Wake = chart.TimeoutEvent(next.ID, TimerPath, at).ID
	return nil
}

// apply applies the job's operation to one target. A purge counts a tree that is gone as done:
// a re-run step finds the trees its first run deleted missing.
func (m *Machine) apply(ctx context.Context, jobID string, sp *Spec, id string, now time.Time) (repeat bool, err error) {
	switch sp.Op {
	case OpSend:
		exe, err := m.client.Store.Load(ctx, id)
		if err != nil {
			return false, err
		}
		if exe.Status.Finished() || exe.Status == stead.StatusCancelling {
			return false, &stead.StatusError{ID: id, Op: string(OpSend), Status: exe.Status, Reason: "it applies no more events"}
		}
		_, err = m.client.Send(ctx, id, stead.Event{ID: CommandID(jobID), Kind: sp.EventKind, Data: sp.EventData, CreatedAt: now})
		return false, err
	case OpPurge:
		_, err := retention.PurgeTree(ctx, m.client.Store, id, retention.Options{Archive: m.opts.Archive})
		if errors.Is(err, stead.ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	out, err := m.client.Control(ctx, id, sp.command(jobID))
	return out.Repeat, err
}

// reason is the reason a refusal is counted under: the status and why for a status refusal, so
// that the reasons stay few whatever the number of targets.
func reason(err error) string {
	if se := (*stead.StatusError)(nil); errors.As(err, &se) {
		r := "execution is " + string(se.Status)
		if se.Reason != "" {
			r += ": " + se.Reason
		}
		return r
	}
	if errors.Is(err, stead.ErrNotFound) {
		return "not found"
	}
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return msg
}
