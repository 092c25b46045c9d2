package worker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// outage makes a store and a transport fail as a database restart does, while down is set.
type outage struct {
	down       atomic.Bool
	commitsToo bool // commits fail as well as acks and nacks
}

func (o *outage) err() error {
	if o.down.Load() {
		return fmt.Errorf("%w: the database is restarting", stead.ErrUnavailable)
	}
	return nil
}

// outageTransport fails acks and nacks during the outage; claims still work, which is what a
// worker sees when the database goes down between its claim and the end of the step.
type outageTransport struct {
	transport.Backend
	o *outage
}

func (t *outageTransport) AckBatch(ctx context.Context, ls []transport.Lease) error {
	if err := t.o.err(); err != nil {
		return err
	}
	return t.Backend.AckBatch(ctx, ls)
}

func (t *outageTransport) Nack(ctx context.Context, l *transport.Lease, delay time.Duration) error {
	if err := t.o.err(); err != nil {
		return err
	}
	return t.Backend.Nack(ctx, l, delay)
}

// outageStore fails commits during the outage when commitsToo is set.
type outageStore struct {
	stead.Backend
	o *outage
}

func (s *outageStore) Commit(ctx context.Context, w *stead.Write) ([]int64, error) {
	if s.o.commitsToo {
		if err := s.o.err(); err != nil {
			return nil, err
		}
	}
	return s.Backend.Commit(ctx, w)
}

func (s *outageStore) CommitBatch(ctx context.Context, ws []*stead.Write) ([]stead.WriteResult, error) {
	if s.o.commitsToo {
		if err := s.o.err(); err != nil {
			return nil, err
		}
	}
	return s.Backend.CommitBatch(ctx, ws)
}

// TestSettlementsOutliveAnOutage checks that the acks and nacks that fail during an outage are
// retried once the database is back, so that the messages in flight then are delivered (again)
// within moments instead of after their lease: a commit that failed must be retried soon, and an
// execution whose ack failed must take its next event soon.
func TestSettlementsOutliveAnOutage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		batch      int
		commitsToo bool
	}{
		{"commit and nack fail, unbatched", 1, true},
		{"commit and nack fail, batched", 8, true},
		{"ack fails, unbatched", 1, false},
		{"ack fails, batched", 8, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			o := &outage{commitsToo: c.commitsToo}
			store := stead.NewStore(&outageStore{Backend: h.store.Backend(), o: o})
			tr := transport.New(&outageTransport{Backend: h.tr.Backend(), o: o}) // h closes the backends
			h.create("x")
			cfg := h.config()
			cfg.Store, cfg.Transport, cfg.BatchSize = store, tr, c.batch
			cfg.Visibility = time.Hour // a message held until its lease ends would never come back here
			h.start(cfg)
			eventually(t, 5*time.Second, "x started", func() bool { _, e := h.counts("x"); return e.Status == stead.StatusRunning })
			o.down.Store(true)
			h.send("x", "tick", "t1")
			eventually(t, 5*time.Second, "the worker met the outage", func() bool { return contains(h.logs.String(), "retrying until the lease ends") })
			o.down.Store(false)
			h.send("x", "tick", "t2")
			eventually(t, 5*time.Second, "both ticks applied after the outage", func() bool { n, _ := h.counts("x"); return n.N == 2 })
		})
	}
}

// TestBackoffsStayBounded checks the pauses after failures: they grow, never pass their cap (so a
// worker retries at most RetryDelay after the database is back), and are jittered.
func TestBackoffsStayBounded(t *testing.T) {
	t.Parallel()
	for _, f := range []struct {
		name string
		fn   func(int, time.Duration) time.Duration
	}{{"claim", claimBackoff}, {"settle", settleBackoff}} {
		seen := map[time.Duration]bool{}
		for n := 1; n < 100; n++ {
			d := f.fn(n, time.Second)
			if d <= 0 || d > time.Second {
				t.Errorf("%s backoff after %d failures: %v, want within (0, 1s]", f.name, n, d)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Errorf("%s backoff: %d distinct pauses in 99 failures: not jittered", f.name, len(seen))
		}
		if first := f.fn(1, time.Second); first > 100*time.Millisecond {
			t.Errorf("%s backoff after one failure: %v, want at most 100ms", f.name, first)
		}
	}
}
