package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/steadhq/stead"
)

// FinishWatcher is an optional interface of a stead.Backend that can say when an execution may
// have finished, so that Client.Wait wakes within milliseconds instead of polling. pgstore's
// Backend implements it with LISTEN/NOTIFY; a backend without it (SQLite, memory, a third-party
// one) is polled.
//
// WatchFinished returns a channel that receives a value when execution id may have finished: a
// commit left it done, failed or cancelled, or notifications may have been lost (the backend
// lost its connection) and the caller should look again. The channel is never closed; the
// backend stops sending and forgets the watch once ctx is done. WatchFinished returns only once
// a finish committed after it returned cannot be missed. An error means the backend cannot
// notify right now (PgBouncer in transaction mode, no connection): the caller polls instead.
type FinishWatcher interface {
	WatchFinished(ctx context.Context, id string) (<-chan struct{}, error)
}

// The pauses between the loads of a waiting Client.Wait. Without notifications the pause starts
// short, so that a step that finishes an execution at once is seen at once, and doubles up to
// Client.WaitPoll. With notifications a load every waitNotified is only the belt to the
// notification's braces (a listener that missed one while reconnecting wakes its waiters anyway).
const (
	waitFirst          = 5 * time.Millisecond
	DefaultWaitPoll    = time.Second
	waitNotified       = 5 * time.Second
	waitUnavailableMax = 5 * time.Second
)

// Wait returns the execution once it has finished: done (Outcome says which final state),
// cancelled, or failed. A failed execution is returned too, although an operator can still
// retry, reset or set its state (and so run it again): it will not move without one, and a
// caller that waited for it must learn that it needs one. A caller that wants to wait through the
// operator's repair calls Wait again.
//
// Wait loads the execution, and while it has not finished waits for the backend's notification
// (a FinishWatcher: pgstore) or polls with a growing pause (at most WaitPoll), until ctx is done
// (ctx.Err() is returned). An execution that does not exist is stead.ErrNotFound at once, and a
// bad id ErrInvalid; an unavailable store is tried again until ctx is done.
func (c *Client) Wait(ctx context.Context, id string) (*stead.Execution, error) {
	if c.Store == nil {
		return nil, fmt.Errorf("worker: Client.Store is nil: %w", stead.ErrInvalid)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop() // ends the watch
	var wake <-chan struct{}
	if fw, ok := c.Store.Backend().(FinishWatcher); ok {
		// Watch before the first load, so that a finish committed between the two is not missed.
		if ch, err := fw.WatchFinished(wctx, id); err == nil {
			wake = ch
		}
	}
	limit := c.WaitPoll
	if limit <= 0 {
		limit = DefaultWaitPoll
	}
	pause := min(waitFirst, limit)
	if wake != nil {
		pause, limit = waitNotified, waitNotified
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	unavailable := 0
	for {
		exe, err := c.Store.Load(ctx, id)
		switch {
		case err == nil:
			unavailable = 0
			if exe.Status.Finished() {
				return exe, nil
			}
		case errors.Is(err, stead.ErrUnavailable) || errors.Is(err, stead.ErrTimeout):
			// A store restarting is no reason to give up a wait: look again, more slowly.
			unavailable++
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		default:
			return nil, fmt.Errorf("worker: wait for %q: %w", id, err)
		}
		d := pause
		if unavailable > 0 {
			d = min(waitFirst<<min(unavailable, 12), waitUnavailableMax)
		}
		timer.Reset(d)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wake:
		case <-timer.C:
			pause = min(pause*2, limit)
		}
	}
}
