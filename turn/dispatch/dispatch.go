package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/steadhq/stead/turn"
)

// Reasons the dispatcher records itself as a row's last failure.
const (
	// CodeAttemptsExhausted: the last retryable failure came at the MaxAttempts-th attempt, so
	// the row was settled as failed instead of retried.
	CodeAttemptsExhausted = "dispatch.attempts_exhausted"
)

// Defaults of a zero Config field.
const (
	DefaultBatchSize    = 16
	DefaultSendTimeout  = 30 * time.Second
	DefaultLease        = 5 * time.Minute
	DefaultMaxAttempts  = 8
	DefaultPollInterval = time.Second
	DefaultGrace        = 5 * time.Second
)

// Config configures a Dispatcher. Zero fields take the defaults documented on each.
type Config struct {
	// WorkerID names this dispatcher in the claims it takes (required). Give every dispatcher on
	// one database its own.
	WorkerID string
	// BatchSize is how many due rows one round claims (default DefaultBatchSize, at most
	// turn.MaxLimit). The round sends them concurrently.
	BatchSize int
	// SendTimeout bounds one Send (default DefaultSendTimeout). A send still running when it
	// runs out has an unknown outcome.
	SendTimeout time.Duration
	// Lease is how long a claim holds (default DefaultLease): a row claimed longer ago than that
	// and still dispatching belongs to a dispatcher that died, and the next round releases it to
	// be claimed again. It must exceed SendTimeout plus Grace, or a slow send could still be
	// running when its row is handed to another dispatcher.
	Lease time.Duration
	// MaxAttempts is how many attempts a row gets before a retryable failure settles it as
	// failed (default DefaultMaxAttempts).
	MaxAttempts int
	// Backoff is the retry schedule (zero fields: DefaultBackoff's).
	Backoff Backoff
	// Reconciler, if set, is asked about every row this dispatcher marks outcome_unknown, and
	// about the rows given to Watch: first one Backoff delay after the row was marked, then at
	// growing intervals on the same schedule while it stays unknown.
	Reconciler Reconciler
	// PollInterval is how long Run waits after a round that found nothing due (default
	// DefaultPollInterval). A round that claimed a full batch is followed at once by the next.
	PollInterval time.Duration
	// Grace is how long the sends in flight may go on once Run's or RunOnce's ctx ends (default
	// DefaultGrace); past it their ctx is cancelled, and each is settled as outcome unknown.
	Grace time.Duration
	// Clock is the time the dispatcher claims, schedules and releases by (default time.Now).
	Clock func() time.Time
	// Random draws the backoff's jitter, uniform in [0, 1) (default math/rand/v2).
	Random func() float64
	// OnError, if set, receives the errors of Run's rounds (a claim the store refused, a
	// settlement that failed); Run goes on regardless.
	OnError func(error)
}

// Dispatcher delivers the turn outbox: it claims due rows with a lease, hands each to a Sender,
// and records the outcome on the row. It works on any turn backend, and several dispatchers may
// share one database: the store hands a row to one claimer at a time.
type Dispatcher struct {
	outbox turn.OutboxStore
	sender Sender
	cfg    Config

	mu      sync.Mutex
	recheck map[turn.ID]recheck // outcome-unknown rows awaiting the Reconciler
}

// recheck is when an outcome-unknown row is next checked, and how many checks it has had.
type recheck struct {
	due    time.Time
	checks int
}

// New returns a dispatcher of outbox through sender. A missing store, sender or worker id, a
// BatchSize above turn.MaxLimit, or a Lease not longer than SendTimeout plus Grace, is ErrInvalid.
func New(outbox turn.OutboxStore, sender Sender, cfg Config) (*Dispatcher, error) {
	if outbox == nil || sender == nil {
		return nil, fmt.Errorf("%w: dispatch: an outbox store and a sender are required", turn.ErrInvalid)
	}
	if cfg.WorkerID == "" {
		return nil, fmt.Errorf("%w: dispatch: a worker id is required", turn.ErrInvalid)
	}
	cfg.BatchSize = orDefault(cfg.BatchSize, DefaultBatchSize)
	if cfg.BatchSize > turn.MaxLimit {
		return nil, fmt.Errorf("%w: dispatch: batch size %d is more than a claim takes (turn.MaxLimit, %d)", turn.ErrInvalid, cfg.BatchSize, turn.MaxLimit)
	}
	cfg.SendTimeout = orDefault(cfg.SendTimeout, DefaultSendTimeout)
	cfg.Lease = orDefault(cfg.Lease, DefaultLease)
	cfg.MaxAttempts = orDefault(cfg.MaxAttempts, DefaultMaxAttempts)
	cfg.PollInterval = orDefault(cfg.PollInterval, DefaultPollInterval)
	cfg.Grace = orDefault(cfg.Grace, DefaultGrace)
	cfg.Backoff = cfg.Backoff.withDefaults()
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Lease <= cfg.SendTimeout+cfg.Grace {
		return nil, fmt.Errorf("%w: dispatch: lease %v must exceed the send timeout %v plus the grace %v",
			turn.ErrInvalid, cfg.Lease, cfg.SendTimeout, cfg.Grace)
	}
	return &Dispatcher{outbox: outbox, sender: sender, cfg: cfg, recheck: map[turn.ID]recheck{}}, nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// now is the dispatcher's time at the contract's precision.
func (d *Dispatcher) now() time.Time { return turn.ClockTime(d.cfg.Clock()) }

// Report says what one round did.
type Report struct {
	Released   []turn.ID // expired claims returned to pending
	Claimed    int
	Completed  int // delivered and recorded
	Retried    int // failed, due again after the backoff
	Failed     int // settled as failed (rejected, or attempts exhausted)
	Unknown    int // marked outcome_unknown
	Unsettled  int // sent, but the outcome could not be recorded: the claim's lease will release it
	Reconciled int // outcome-unknown rows the Reconciler settled or rescheduled
	// Errors are the settlements and reconciliations that failed; the round went on past them.
	Errors []error
}

// RunOnce runs one round: it releases the claims whose lease ran out, reconciles the
// outcome-unknown rows that are due for a check, claims up to BatchSize due rows, sends them
// concurrently and records each outcome. It returns once every send of the round has been
// settled; if ctx ends first, the sends in flight get Grace more, then are cancelled and settled
// as outcome unknown. Only a failure to release or claim is returned as an error; the
// per-row failures are in the Report.
func (d *Dispatcher) RunOnce(ctx context.Context) (Report, error) {
	var r Report
	if err := ctx.Err(); err != nil {
		return r, err
	}
	now := d.now()
	released, err := d.outbox.ReleaseExpiredClaims(ctx, now.Add(-d.cfg.Lease))
	if err != nil {
		return r, fmt.Errorf("dispatch: release expired claims: %w", err)
	}
	r.Released = released
	d.reconcileDue(ctx, now, &r)
	claimed, err := d.outbox.ClaimDue(ctx, now, d.cfg.BatchSize, d.cfg.WorkerID)
	if err != nil {
		return r, fmt.Errorf("dispatch: claim: %w", err)
	}
	r.Claimed = len(claimed)
	if len(claimed) == 0 {
		return r, nil
	}
	sendCtx, stop := d.graceful(ctx)
	defer stop()
	results := make([]*sendError, len(claimed))
	var wg sync.WaitGroup
	for i, e := range claimed {
		wg.Go(func() { results[i] = d.send(sendCtx, e) })
	}
	wg.Wait()
	// Settlements must land even when ctx has ended: a row left dispatching waits out its whole
	// lease before anyone may send it again. They get the grace's bound instead.
	settleCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.Grace)
	defer cancel()
	for i, e := range claimed {
		d.settle(settleCtx, e, results[i], &r)
	}
	return r, nil
}

// graceful returns the context of a round's sends: it ends Grace after ctx does (or when stop is
// called), so a send in flight at shutdown gets a bounded time to finish.
func (d *Dispatcher) graceful(ctx context.Context) (context.Context, func()) {
	sendCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	finished := make(chan struct{})
	var done sync.WaitGroup
	done.Go(func() {
		select {
		case <-finished:
			return
		case <-ctx.Done():
		}
		t := time.NewTimer(d.cfg.Grace)
		defer t.Stop()
		select {
		case <-finished:
		case <-t.C:
			cancel()
		}
	})
	return sendCtx, func() {
		close(finished)
		done.Wait()
		cancel()
	}
}

// abandonAfter is how long a send may keep running once its context has ended before the
// dispatcher stops waiting for it: a Send that honours ctx returns well within it; one that
// ignores ctx is abandoned (its goroutine ends whenever Send returns) rather than allowed to
// stall the round and hold its claim past the lease.
const abandonAfter = time.Second

// send hands e to the sender under the per-send timeout and classifies what came back. A send
// still running when its context ended, or one that returned the context's error, has an
// unknown outcome: the destination may have acted on it.
func (d *Dispatcher) send(ctx context.Context, e turn.OutboxEntry) *sendError {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.SendTimeout)
	defer cancel()
	done := make(chan error, 1) // buffered: an abandoned send still finishes and exits
	go func() { done <- d.sender.Send(ctx, e) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		t := time.NewTimer(abandonAfter)
		defer t.Stop()
		select {
		case err = <-done:
		case <-t.C:
			return &sendError{kind: outcomeUnknown, err: fmt.Errorf("send abandoned, still running after its context ended: %w", ctx.Err())}
		}
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return &sendError{kind: outcomeUnknown, err: fmt.Errorf("send cut short: %w", err)}
	}
	return classify(err)
}

// settle records the outcome of e's send on its row.
func (d *Dispatcher) settle(ctx context.Context, e turn.OutboxEntry, res *sendError, r *Report) {
	var err error
	switch res.kind {
	case outcomeDelivered:
		if err = d.outbox.MarkCompleted(ctx, e.OutboxID); err == nil {
			r.Completed++
		}
	case outcomeReject:
		if err = d.outbox.MarkFailed(ctx, e.OutboxID, res.code, time.Time{}); err == nil {
			r.Failed++
		}
	case outcomeRetry:
		if e.AttemptCount >= d.cfg.MaxAttempts {
			if err = d.outbox.MarkFailed(ctx, e.OutboxID, CodeAttemptsExhausted, time.Time{}); err == nil {
				r.Failed++
			}
			break
		}
		retryAt := d.now().Add(d.cfg.Backoff.Delay(e.AttemptCount, d.cfg.Random))
		if err = d.outbox.MarkFailed(ctx, e.OutboxID, res.code, retryAt); err == nil {
			r.Retried++
		}
	case outcomeUnknown:
		if err = d.outbox.MarkOutcomeUnknown(ctx, e.OutboxID, res.remoteRef); err == nil {
			r.Unknown++
			d.Watch(e.OutboxID)
		}
	}
	if err != nil {
		r.Unsettled++
		r.Errors = append(r.Errors, fmt.Errorf("dispatch: record %s of outbox %s: %w", res.kind, e.OutboxID, err))
	}
}

// Watch has the Reconciler check the outcome-unknown row id, one backoff delay from now and then
// on the backoff schedule while it stays unknown. The dispatcher watches the rows it marks
// itself; Watch is for rows another dispatcher left unknown (one that stopped). Give a row to
// one dispatcher only: two reconciling one row could both reschedule it. Without a Reconciler,
// Watch does nothing.
func (d *Dispatcher) Watch(id turn.ID) {
	if d.cfg.Reconciler == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.recheck[id]; !ok {
		d.recheck[id] = recheck{due: d.now().Add(d.cfg.Backoff.Delay(1, d.cfg.Random))}
	}
}

// Watching returns the outcome-unknown rows awaiting a check, in id order.
func (d *Dispatcher) Watching() []turn.ID {
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := make([]turn.ID, 0, len(d.recheck))
	for id := range d.recheck {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, turn.ID.Compare)
	return ids
}

// reconcileDue checks every watched row whose check is due at now.
func (d *Dispatcher) reconcileDue(ctx context.Context, now time.Time, r *Report) {
	d.mu.Lock()
	var due []turn.ID
	for id, c := range d.recheck {
		if !c.due.After(now) {
			due = append(due, id)
		}
	}
	d.mu.Unlock()
	slices.SortFunc(due, turn.ID.Compare)
	for _, id := range due {
		settled, err := d.reconcile(ctx, id, now)
		if err != nil {
			r.Errors = append(r.Errors, err)
		}
		d.mu.Lock()
		if settled {
			delete(d.recheck, id)
			r.Reconciled++
		} else {
			c := d.recheck[id]
			c.checks++
			c.due = now.Add(d.cfg.Backoff.Delay(c.checks+1, d.cfg.Random))
			d.recheck[id] = c
		}
		d.mu.Unlock()
	}
}

// reconcile asks the Reconciler about row id and acts on its verdict. It reports whether the row
// needs no further check (settled, rescheduled, or no longer outcome_unknown).
func (d *Dispatcher) reconcile(ctx context.Context, id turn.ID, now time.Time) (bool, error) {
	rec, err := d.outbox.LoadOutbox(ctx, id)
	if errors.Is(err, turn.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("dispatch: reconcile outbox %s: %w", id, err)
	}
	if rec.Entry.Status != turn.OutboxOutcomeUnknown {
		return true, nil // someone settled it already
	}
	verdict, err := d.cfg.Reconciler.Check(ctx, rec)
	if err != nil {
		return false, fmt.Errorf("dispatch: reconcile outbox %s: check: %w", id, err)
	}
	switch verdict {
	case Delivered:
		err = d.outbox.MarkCompleted(ctx, id)
	case NotDelivered:
		err = d.outbox.Reschedule(ctx, id, now)
	default:
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dispatch: reconcile outbox %s as %s: %w", id, verdict, err)
	}
	return true, nil
}

// Run runs rounds until ctx ends: after a round that claimed a full batch the next starts at
// once, otherwise after PollInterval. When ctx ends, the round in progress finishes within
// Grace (see RunOnce) and Run returns nil; it leaves no goroutine behind. Round errors go to
// OnError.
func (d *Dispatcher) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		r, err := d.RunOnce(ctx)
		if d.cfg.OnError != nil {
			if err != nil && ctx.Err() == nil {
				d.cfg.OnError(err)
			}
			for _, e := range r.Errors {
				d.cfg.OnError(e)
			}
		}
		wait := d.cfg.PollInterval
		if err == nil && r.Claimed == d.cfg.BatchSize {
			wait = 0
		}
		t.Reset(wait)
	}
}
