package transporttest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead/transport"
)

// Claimer is one of the concurrent claimers of Shared: it claims up to Max messages at a time
// from T.
type Claimer struct {
	T   *transport.Transport
	Max int
}

// Shared checks transports that share one database, as processes or hosts would. It publishes
// perGroup messages to each of groups groups through the first claimer's transport, runs the
// claimers concurrently until every message is acked, and fails t unless each message was
// delivered once, in order within its group, and never while another message of its group was
// in flight. Run cannot check this: its Factory gives one transport per scenario.
func Shared(t *testing.T, groups, perGroup int, claimers ...Claimer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var msgs []transport.Outgoing
	for i := range perGroup {
		for g := range groups {
			msgs = append(msgs, transport.Outgoing{Group: fmt.Sprintf("g%02d", g), Event: Event(fmt.Sprintf("g%02d-%02d", g, i))})
		}
	}
	if err := claimers[0].T.PublishBatch(ctx, msgs); err != nil {
		t.Fatalf("PublishBatch: %v", err)
	}
	var (
		mu       sync.Mutex
		inFlight = map[string]bool{}
		got      = map[string][]string{}
		total    int
		wg       sync.WaitGroup
		failOnce sync.Once
		failed   error
	)
	// The first error ends every claimer: the others would otherwise wait for messages that the
	// failed one holds.
	fail := func(err error) {
		failOnce.Do(func() { failed = err; cancel() })
	}
	claim := func(w int, c Claimer) error {
		for {
			mu.Lock()
			finished := total >= groups*perGroup
			mu.Unlock()
			if finished {
				return nil
			}
			ls, err := c.T.ClaimBatch(ctx, fmt.Sprintf("w%d", w), time.Hour, 0, c.Max)
			if err != nil {
				return err
			}
			mu.Lock()
			for _, l := range ls {
				if inFlight[l.Group] {
					mu.Unlock()
					return fmt.Errorf("%s claimed while %s is in flight", l.Event.ID, l.Group)
				}
				inFlight[l.Group] = true
				got[l.Group] = append(got[l.Group], l.Event.ID)
			}
			// Leave the in-flight set before the ack lands: after it the group is claimable.
			for _, l := range ls {
				delete(inFlight, l.Group)
			}
			mu.Unlock()
			if err := c.T.AckBatch(ctx, ls); err != nil {
				return err
			}
			mu.Lock()
			total += len(ls)
			mu.Unlock()
			if len(ls) == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}
	for w, c := range claimers {
		wg.Go(func() {
			if err := claim(w, c); err != nil {
				fail(err)
			}
		})
	}
	wg.Wait()
	if failed != nil {
		t.Fatal(failed)
	}
	for g := range groups {
		grp := fmt.Sprintf("g%02d", g)
		var want []string
		for i := range perGroup {
			want = append(want, fmt.Sprintf("%s-%02d", grp, i))
		}
		if !slices.Equal(got[grp], want) {
			t.Errorf("group %s delivered %v, want %v", grp, got[grp], want)
		}
	}
}
