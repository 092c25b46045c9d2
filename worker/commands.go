package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
)

// Control applies an operator's command to execution id at once, and returns what it did.
//
// A command is a control event (chart.KindSuspend and friends) committed to the execution like
// any step: loaded with "was this command id applied?", computed, and committed by
// compare-and-swap with the command id as the processed marker, computed again if a step commits
// first. It does not wait behind the execution's queue, so it takes effect even behind a backlog
// or a parked queue; and it applies once per command id, however often it is sent. What it
// emits commits in the outbox with it: its cascades to children are applied to them the same way
// (by this call, or by a worker's relay if this process dies first), and the rest is published.
//
//   - OpSuspend parks a running execution: workers nack its events with Config.SuspendRecheck
//     instead of applying them, its timers stay armed and fire into the parked queue, and its
//     unfinished children (regions, invoked machines) are suspended with it.
//   - OpResume runs a suspended execution and its suspended children again; what was parked,
//     timeouts that fell due included, is delivered in order within SuspendRecheck.
//   - OpCancel is cooperative: the execution becomes cancelling and a cancel event is queued
//     behind its backlog; workers drop the backlog unapplied, and the cancel event ends it
//     cancelled: its active states are left (exit actions run, innermost first), timers disarmed,
//     parent told. Every unfinished child is cancelled the same way, down the tree. A failed
//     execution, which applies nothing, is cancelled at once.
//   - OpReset returns the execution to its initial configuration with cmd.Context, or the
//     context it started with; OpSetState moves it to cmd.State; OpRetry applies a failed
//     execution's dead letter again from the state it failed in. The machine computes these
//     (chart.Engine.Control says how), so Known must hold the execution's definition, as a
//     Controller: without it the command is refused with a *MachineError. They take effect at once: events already queued are applied after them, to the
//     new configuration. A suspended execution stays suspended.
//
// A status the command does not take — any command on a done or cancelled execution, resume of
// one not suspended, retry of one not failed — is a *stead.StatusError (ErrInvalid), as is bad
// input (an unknown state, a context that is not an object), as is a *MachineError; nothing is
// written. A missing execution is ErrNotFound. CheckControl runs the same checks and writes
// nothing: a dry run.
func (c *Client) Control(ctx context.Context, id string, cmd Command) (Outcome, error) {
	if err := check.ID("execution id", id); err != nil {
		return Outcome{}, err
	}
	ev, err := cmd.event(c.now())
	if err != nil {
		return Outcome{}, err
	}
	return c.relay().control(ctx, id, ev, false)
}

// CheckControl is the dry run of Control: it loads execution id and runs every check Control
// runs — the status, the machine reset, set-state and retry need (a *MachineError when Known
// lacks it), set-state's state, retry's dead letter — and returns the error Control would, or
// the Outcome as it stands (Repeat when the command id was applied before). It writes nothing
// and runs no action. Give cmd.ID to check a repeat.
func (c *Client) CheckControl(ctx context.Context, id string, cmd Command) (Outcome, error) {
	if err := check.ID("execution id", id); err != nil {
		return Outcome{}, err
	}
	ev, err := cmd.event(c.now())
	if err != nil {
		return Outcome{}, err
	}
	return c.relay().control(ctx, id, ev, true)
}

// Suspend is Control with OpSuspend. commandID may be empty (a fresh one); pass the same one to
// make a repeated call idempotent.
func (c *Client) Suspend(ctx context.Context, id, commandID string) (Outcome, error) {
	return c.Control(ctx, id, Command{Op: OpSuspend, ID: commandID})
}

// Resume is Control with OpResume.
func (c *Client) Resume(ctx context.Context, id, commandID string) (Outcome, error) {
	return c.Control(ctx, id, Command{Op: OpResume, ID: commandID})
}

// Cancel is Control with OpCancel.
func (c *Client) Cancel(ctx context.Context, id, commandID string) (Outcome, error) {
	return c.Control(ctx, id, Command{Op: OpCancel, ID: commandID})
}

// Reset is Control with OpReset: context nil starts from the context the execution started with.
func (c *Client) Reset(ctx context.Context, id, commandID string, context json.RawMessage) (Outcome, error) {
	return c.Control(ctx, id, Command{Op: OpReset, ID: commandID, Context: context})
}

// SetState is Control with OpSetState.
func (c *Client) SetState(ctx context.Context, id, commandID, state string) (Outcome, error) {
	return c.Control(ctx, id, Command{Op: OpSetState, ID: commandID, State: state})
}

// Retry is Control with OpRetry.
func (c *Client) Retry(ctx context.Context, id, commandID string) (Outcome, error) {
	return c.Control(ctx, id, Command{Op: OpRetry, ID: commandID})
}

// relay applies commands and delivers what they emit with the client's store, transport,
// machines and clock. It never claims and holds nothing: one is made per call.
func (c *Client) relay() *relay {
	log := c.logger()
	return &relay{store: c.Store, tr: c.Transport, machines: c.Known, clock: c.now, log: log, stamper: c.Stamper,
		committed: func(exe *stead.Execution, ev stead.Event, last bool) { logFailed(log, exe, ev, last) }}
}

// logFailed warns of an execution that a command (a retry, a reset whose entry action failed) or
// the start of a child it spawned left failed, with the line a worker writes (warnFailed).
func logFailed(log *slog.Logger, exe *stead.Execution, ev stead.Event, last bool) {
	if last && exe.Status == stead.StatusFailed {
		warnFailed(log, exe, ev)
	}
}

// BatchOptions tunes ControlMatching.
type BatchOptions struct {
	// DryRun reports what the command would do to each execution the selection matches, and
	// writes nothing: each one goes through the checks the command applies (its status, the
	// machine reset, set-state and retry need, set-state's state, retry's dead letter), so an
	// execution the dry run counts as applied is one the command applies, and one it refuses
	// is refused with the same error. No action runs.
	DryRun bool
	// Concurrency is how many executions are commanded at once (default 8).
	Concurrency int
	// Progress, when set, is called after each page of the selection with the report so far.
	Progress func(BatchReport)
}

// BatchReport is what ControlMatching did.
type BatchReport struct {
	CommandID string
	DryRun    bool
	// Matched is how many executions the selection listed.
	Matched int
	// Applied counts the executions the command changed (or, in a dry run, would change).
	Applied int
	// Repeats counts the executions that had applied this command id already.
	Repeats int
	// Refused holds the executions whose status (or data) refused the command, by id, each with
	// its error: a *stead.StatusError, or ErrNotFound for one that was purged meanwhile.
	Refused []Refusal
}

// Refusal is one execution a batch command did not change, and why.
type Refusal struct {
	ExecutionID string
	Err         error
}

// defaultBatchPage is how many executions a batch lists at a time when the selection leaves its
// Limit at 0.
const defaultBatchPage = 500

// ControlMatching applies cmd to every execution sel selects ("cancel every running execution of
// definition X created before T": DefinitionID, Statuses and Created.Before), page by page in id
// order, with one command id for all of them, so that running the batch again with the same
// cmd.ID skips what it did. sel.Limit is the page size (default 500); sel.Cursor must be empty.
// Set RootsOnly for commands that cascade (suspend, resume, cancel): a child selected beside its
// parent would otherwise be refused once the parent's cascade reached it first.
//
// A selection needs at least one criterion (a definition, statuses, an id prefix, a time window
// or an attribute condition): an empty filter is ErrInvalid rather than every execution. One that matches nothing
// returns an error wrapping ErrNotFound. An execution the command does not fit is listed in the
// report's Refused and the batch goes on; an error of the store or the transport stops it and is
// returned with the report so far.
func (c *Client) ControlMatching(ctx context.Context, sel stead.ListFilter, cmd Command, opts BatchOptions) (BatchReport, error) {
	if sel.Cursor != "" {
		return BatchReport{}, check.Invalidf("a batch selection pages itself: its cursor must be empty")
	}
	if sel.DefinitionID == "" && len(sel.Statuses) == 0 && sel.IDPrefix == "" && len(sel.Attributes) == 0 &&
		sel.Created.IsZero() && sel.Updated.IsZero() && sel.Finished.IsZero() {
		return BatchReport{}, check.Invalidf("a batch selection needs a definition, statuses, an id prefix, a time window or an attribute condition")
	}
	if sel.Limit == 0 {
		sel.Limit = defaultBatchPage
	}
	if cmd.ID == "" {
		cmd.ID = "cmd-" + NewEventID()[3:]
	}
	ev, err := cmd.event(c.now())
	if err != nil {
		return BatchReport{}, err
	}
	workers := opts.Concurrency
	if workers <= 0 {
		workers = 8
	}
	rep := BatchReport{CommandID: ev.ID, DryRun: opts.DryRun}
	r := c.relay()
	var mu sync.Mutex
	var fatal error
	for {
		page, err := c.Store.List(ctx, sel)
		if err != nil {
			return rep, err
		}
		rep.Matched += len(page.Items)
		sem := make(chan struct{}, workers)
		var wg sync.WaitGroup
		for _, it := range page.Items {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				out, err := r.control(ctx, it.ID, ev, opts.DryRun)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && out.Repeat:
					rep.Repeats++
				case err == nil:
					rep.Applied++
				case errors.Is(err, stead.ErrInvalid) || errors.Is(err, stead.ErrNotFound):
					rep.Refused = append(rep.Refused, Refusal{ExecutionID: it.ID, Err: err})
				case fatal == nil:
					fatal = fmt.Errorf("%s %q: %w", cmd.Op, it.ID, err)
				}
			})
		}
		wg.Wait()
		slices.SortFunc(rep.Refused, func(a, b Refusal) int { return strings.Compare(a.ExecutionID, b.ExecutionID) })
		if opts.Progress != nil {
			opts.Progress(rep)
		}
		if fatal != nil {
			return rep, fatal
		}
		if page.NextCursor == "" {
			break
		}
		sel.Cursor = page.NextCursor
	}
	if rep.Matched == 0 {
		return rep, fmt.Errorf("worker: %s: %w: no execution matches the selection", cmd.Op, stead.ErrNotFound)
	}
	return rep, nil
}
