package dispatch_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/dispatch"
)

func TestBackoffSchedule(t *testing.T) {
	t.Parallel()
	b := dispatch.Backoff{Initial: time.Second, Max: time.Minute, Jitter: 0.2}
	never := func() float64 { return 0 }
	most := func() float64 { return 0.999999 }
	tests := []struct {
		attempt int
		random  func() float64
		want    time.Duration
	}{
		{0, never, time.Second},
		{1, never, time.Second},
		{2, never, 2 * time.Second},
		{3, never, 4 * time.Second},
		{6, never, 32 * time.Second},
		{7, never, time.Minute}, // 64 s, capped
		{1000, never, time.Minute},
		{1, most, 800 * time.Millisecond}, // the jitter takes off at most 20 %
		{7, most, 48 * time.Second},
	}
	for _, tt := range tests {
		got := b.Delay(tt.attempt, tt.random)
		if d := got - tt.want; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("Delay(%d) = %v, want %v", tt.attempt, got, tt.want)
		}
	}
	// The defaults: 1 s doubling to a 10 min cap.
	var zero dispatch.Backoff
	if got := zero.Delay(4, never); got != 8*time.Second {
		t.Errorf("default Delay(4) = %v, want 8s", got)
	}
	if got := zero.Delay(30, never); got != 10*time.Minute {
		t.Errorf("default Delay(30) = %v, want 10m", got)
	}
	for n := range 64 {
		if got := b.Delay(n, nil); got <= 0 || got > time.Minute {
			t.Fatalf("Delay(%d) = %v, outside (0, cap]", n, got)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	s := backends[0].setup(t)(t)
	ok := dispatch.SenderFunc(func(context.Context, turn.OutboxEntry) error { return nil })
	tests := []struct {
		name   string
		outbox turn.OutboxStore
		sender dispatch.Sender
		cfg    dispatch.Config
	}{
		{"no store", nil, ok, dispatch.Config{WorkerID: "w"}},
		{"no sender", s.Outbox, nil, dispatch.Config{WorkerID: "w"}},
		{"no worker id", s.Outbox, ok, dispatch.Config{}},
		{"lease within a send", s.Outbox, ok, dispatch.Config{WorkerID: "w", SendTimeout: time.Minute, Lease: time.Minute}},
		{"a batch no claim takes", s.Outbox, ok, dispatch.Config{WorkerID: "w", BatchSize: turn.MaxLimit + 1}},
	}
	for _, tt := range tests {
		if _, err := dispatch.New(tt.outbox, tt.sender, tt.cfg); !errors.Is(err, turn.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", tt.name, err)
		}
	}
}

// senderByDestination behaves as the row's destination says: it delivers, fails for a retry,
// is refused for good, hangs until its context ends, or loses track of the outcome.
func senderByDestination(sent *sends) dispatch.Sender {
	return dispatch.SenderFunc(func(ctx context.Context, e turn.OutboxEntry) error {
		sent.add(e.OutboxID)
		switch e.Destination {
		case "retry":
			return dispatch.Retry("smtp.busy", errors.New("421 try later"))
		case "reject":
			return dispatch.Reject("smtp.no_such_user", nil)
		case "hang":
			<-ctx.Done()
			return ctx.Err()
		case "unknown":
			return dispatch.Unknown("msg-42", errors.New("connection reset after DATA"))
		case "plain-error":
			return errors.New("something broke") // unclassified: the outcome is unknown
		}
		return nil
	})
}

// One round records each kind of outcome on its row, on every backend.
func TestRoundRecordsEachOutcome(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, open func(*testing.T) turn.Stores) {
		s := open(t)
		clk := newClock()
		var sent sends
		d, err := dispatch.New(s.Outbox, senderByDestination(&sent), dispatch.Config{
			WorkerID: "w1", SendTimeout: 50 * time.Millisecond, Clock: clk.Now, Random: func() float64 { return 0 },
		})
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]turn.ID{}
		for i, dest := range []string{"ok", "retry", "reject", "hang", "unknown", "plain-error"} {
			ids[dest] = enqueue(t, s, dest, epoch.Add(time.Duration(i)*time.Millisecond))
		}
		r, err := d.RunOnce(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if r.Claimed != 6 || r.Completed != 1 || r.Retried != 1 || r.Failed != 1 || r.Unknown != 3 || r.Unsettled != 0 {
			t.Fatalf("report %+v", r)
		}
		tests := []struct {
			dest      string
			status    turn.OutboxStatus
			failure   string
			remoteRef string
			next      time.Time
		}{
			{"ok", turn.OutboxCompleted, "", "", time.Time{}},
			{"retry", turn.OutboxPending, "smtp.busy", "", epoch.Add(time.Second)}, // the first backoff
			{"reject", turn.OutboxFailed, "smtp.no_such_user", "", time.Time{}},
			{"hang", turn.OutboxOutcomeUnknown, "", "", time.Time{}},
			{"unknown", turn.OutboxOutcomeUnknown, "", "msg-42", time.Time{}},
			{"plain-error", turn.OutboxOutcomeUnknown, "", "", time.Time{}},
		}
		for _, tt := range tests {
			rec := load(t, s, ids[tt.dest])
			if rec.Entry.Status != tt.status || rec.LastFailure != tt.failure || rec.RemoteRef != tt.remoteRef ||
				!rec.Entry.NextAttemptAt.Equal(tt.next) || rec.Claim != nil || rec.Entry.AttemptCount != 1 {
				t.Errorf("%s: %+v, want status %s, failure %q, remote ref %q, next %v", tt.dest, rec, tt.status, tt.failure, tt.remoteRef, tt.next)
			}
		}
		// Nothing is due until the backoff has passed; then only the retryable row is sent again.
		if r, _ := d.RunOnce(t.Context()); r.Claimed != 0 {
			t.Fatalf("a round before the backoff claimed %d", r.Claimed)
		}
		clk.Advance(time.Second)
		if r, _ := d.RunOnce(t.Context()); r.Claimed != 1 || sent.count(ids["retry"]) != 2 {
			t.Fatalf("a round after the backoff: %+v, sends %v", r, &sent)
		}
		for dest, id := range ids {
			if dest != "retry" && sent.count(id) != 1 {
				t.Errorf("%s sent %d times", dest, sent.count(id))
			}
		}
	})
}

// A row that keeps failing is retried on the schedule and settled as failed at MaxAttempts.
func TestAttemptsRunOut(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, open func(*testing.T) turn.Stores) {
		s := open(t)
		clk := newClock()
		var sent sends
		d, err := dispatch.New(s.Outbox, senderByDestination(&sent), dispatch.Config{
			WorkerID: "w1", MaxAttempts: 3, Clock: clk.Now, Random: func() float64 { return 0 },
			Backoff: dispatch.Backoff{Initial: time.Second, Max: time.Hour},
		})
		if err != nil {
			t.Fatal(err)
		}
		id := enqueue(t, s, "retry", epoch)
		for attempt, wait := range []time.Duration{time.Second, 2 * time.Second} {
			if _, err := d.RunOnce(t.Context()); err != nil {
				t.Fatal(err)
			}
			rec := load(t, s, id)
			if rec.Entry.Status != turn.OutboxPending || !rec.Entry.NextAttemptAt.Equal(clk.Now().Add(wait)) {
				t.Fatalf("after attempt %d: %+v, want pending due in %v", attempt+1, rec, wait)
			}
			clk.Advance(wait)
		}
		if _, err := d.RunOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		rec := load(t, s, id)
		if rec.Entry.Status != turn.OutboxFailed || rec.LastFailure != dispatch.CodeAttemptsExhausted || rec.Entry.AttemptCount != 3 {
			t.Fatalf("after the last attempt: %+v", rec)
		}
		if sent.count(id) != 3 {
			t.Fatalf("sent %d times, want 3", sent.count(id))
		}
	})
}

// The Reconciler settles outcome-unknown rows: delivered ones are completed, undelivered ones
// are sent again, and the still-unknown one is left alone and asked again later.
func TestReconciliation(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, open func(*testing.T) turn.Stores) {
		s := open(t)
		clk := newClock()
		var sent, checked sends
		verdicts := map[turn.ID]dispatch.Verdict{}
		firstTry := map[turn.ID]bool{}
		sender := dispatch.SenderFunc(func(ctx context.Context, e turn.OutboxEntry) error {
			if sent.add(e.OutboxID) == 1 {
				firstTry[e.OutboxID] = true
				return dispatch.Unknown("ref-"+e.OutboxID.String()[:8], nil)
			}
			return nil
		})
		d, err := dispatch.New(s.Outbox, sender, dispatch.Config{
			WorkerID: "w1", Clock: clk.Now, Random: func() float64 { return 0 }, BatchSize: 1,
			Reconciler: dispatch.ReconcilerFunc(func(ctx context.Context, rec turn.OutboxRecord) (dispatch.Verdict, error) {
				checked.add(rec.Entry.OutboxID)
				if rec.RemoteRef == "" {
					return dispatch.StillUnknown, errors.New("no remote reference recorded")
				}
				return verdicts[rec.Entry.OutboxID], nil
			}),
		})
		if err != nil {
			t.Fatal(err)
		}
		delivered := enqueue(t, s, "d", epoch)
		lost := enqueue(t, s, "l", epoch.Add(time.Millisecond))
		unsure := enqueue(t, s, "u", epoch.Add(2*time.Millisecond))
		verdicts[delivered], verdicts[lost], verdicts[unsure] = dispatch.Delivered, dispatch.NotDelivered, dispatch.StillUnknown
		for range 3 { // one row per round (BatchSize 1)
			if _, err := d.RunOnce(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		if got := d.Watching(); len(got) != 3 {
			t.Fatalf("watching %v, want the three unknown rows", got)
		}
		clk.Advance(time.Second) // the first recheck is one backoff delay later
		r, err := d.RunOnce(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if r.Reconciled != 2 || r.Claimed != 1 {
			t.Fatalf("report %+v, want 2 reconciled and the lost row claimed again", r)
		}
		if rec := load(t, s, delivered); rec.Entry.Status != turn.OutboxCompleted || sent.count(delivered) != 1 {
			t.Fatalf("delivered row: %+v, sent %d times", rec, sent.count(delivered))
		}
		if rec := load(t, s, lost); rec.Entry.Status != turn.OutboxCompleted || sent.count(lost) != 2 {
			t.Fatalf("lost row: %+v, sent %d times, want completed on the second send", rec, sent.count(lost))
		}
		if rec := load(t, s, unsure); rec.Entry.Status != turn.OutboxOutcomeUnknown || sent.count(unsure) != 1 {
			t.Fatalf("unsure row: %+v, sent %d times", rec, sent.count(unsure))
		}
		if got := d.Watching(); len(got) != 1 || got[0] != unsure {
			t.Fatalf("watching %v, want only the unsure row", got)
		}
		// The next check of the unsure row waits for the second backoff delay.
		clk.Advance(time.Second)
		_, _ = d.RunOnce(t.Context())
		if checked.count(unsure) != 1 {
			t.Fatalf("unsure row checked %d times before its recheck was due", checked.count(unsure))
		}
		clk.Advance(time.Second)
		_, _ = d.RunOnce(t.Context())
		if checked.count(unsure) != 2 {
			t.Fatalf("unsure row checked %d times, want 2", checked.count(unsure))
		}
	})
}

// A claim whose dispatcher died is released once its lease has run out, and the row is sent.
func TestExpiredClaimsAreReleased(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, open func(*testing.T) turn.Stores) {
		s := open(t)
		clk := newClock()
		id := enqueue(t, s, "ok", epoch)
		if _, err := s.Outbox.ClaimDue(t.Context(), epoch, 10, "dead-worker"); err != nil {
			t.Fatal(err)
		}
		var sent sends
		d, err := dispatch.New(s.Outbox, senderByDestination(&sent), dispatch.Config{WorkerID: "w1", Clock: clk.Now, Lease: time.Minute, SendTimeout: time.Second, Grace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Minute) // exactly the lease: the claim still holds
		if r, _ := d.RunOnce(t.Context()); len(r.Released) != 0 || r.Claimed != 0 {
			t.Fatalf("within the lease: %+v", r)
		}
		clk.Advance(time.Microsecond)
		r, err := d.RunOnce(t.Context())
		if err != nil || len(r.Released) != 1 || r.Released[0] != id || r.Completed != 1 {
			t.Fatalf("past the lease: %+v, %v", r, err)
		}
		if rec := load(t, s, id); rec.Entry.Status != turn.OutboxCompleted || rec.Entry.AttemptCount != 2 {
			t.Fatalf("row: %+v", rec)
		}
	})
}

// Two dispatchers, each on its own handle of one database, drain one outbox: every row is sent
// exactly once (the claims hold throughout: the lease is far longer than the test).
func TestTwoDispatchersSendEachRowOnce(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, open func(*testing.T) turn.Stores) {
		first, second := open(t), open(t)
		const rows = 60
		ids := make([]turn.ID, rows)
		for i := range ids {
			ids[i] = enqueue(t, first, "ok", epoch.Add(time.Duration(i)*time.Millisecond))
		}
		var sent sends
		slow := dispatch.SenderFunc(func(ctx context.Context, e turn.OutboxEntry) error {
			sent.add(e.OutboxID)
			time.Sleep(time.Millisecond)
			return nil
		})
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		done := make(chan error, 2)
		for i, s := range []turn.Stores{first, second} {
			d, err := dispatch.New(s.Outbox, slow, dispatch.Config{WorkerID: []string{"w1", "w2"}[i], BatchSize: 4, PollInterval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			go func() { done <- d.Run(ctx) }()
		}
		for {
			all := true
			for _, id := range ids {
				all = all && sent.count(id) > 0
			}
			if all || ctx.Err() != nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond) // a few more rounds: nothing may be sent again
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range ids {
			if n := sent.count(id); n != 1 {
				t.Fatalf("row %s sent %d times", id, n)
			}
			if rec := load(t, first, id); rec.Entry.Status != turn.OutboxCompleted {
				t.Fatalf("row %s: %+v", id, rec)
			}
		}
	})
}

// Shutdown: a send in flight when Run's context ends gets the grace, then is cancelled and
// recorded as outcome unknown; Run returns and no goroutine is left behind. A sender that
// ignores its context is abandoned rather than waited for.
func TestShutdownIsBoundedAndLeavesNothingRunning(t *testing.T) {
	tests := []struct {
		name     string
		send     func(ctx context.Context, stop <-chan struct{}) error
		lingers  bool // the send's goroutine outlives Run
		maxTaken time.Duration
	}{
		{"sender honours its context", func(ctx context.Context, _ <-chan struct{}) error {
			<-ctx.Done()
			return ctx.Err()
		}, false, 2 * time.Second},
		{"sender ignores its context", func(_ context.Context, stop <-chan struct{}) error {
			<-stop
			return nil
		}, true, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := backends[0].setup(t)(t)
			before := runtime.NumGoroutine()
			id := enqueue(t, s, "hang", epoch)
			started := make(chan struct{})
			stop := make(chan struct{})
			d, err := dispatch.New(s.Outbox, dispatch.SenderFunc(func(ctx context.Context, e turn.OutboxEntry) error {
				close(started)
				return tt.send(ctx, stop)
			}), dispatch.Config{WorkerID: "w1", Grace: 100 * time.Millisecond, SendTimeout: time.Hour, Lease: 2 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- d.Run(ctx) }()
			<-started
			begin := time.Now()
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(tt.maxTaken):
				t.Fatal("Run did not return")
			}
			if taken := time.Since(begin); taken < 100*time.Millisecond {
				t.Fatalf("Run returned after %v, before the grace ran out", taken)
			}
			if rec := load(t, s, id); rec.Entry.Status != turn.OutboxOutcomeUnknown {
				t.Fatalf("row after shutdown: %+v, want outcome_unknown", rec)
			}
			if tt.lingers {
				close(stop) // the abandoned send may now finish and exit
			}
			deadline := time.Now().Add(2 * time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				t.Fatalf("%d goroutines after Run returned, %d before", n, before)
			}
		})
	}
}
