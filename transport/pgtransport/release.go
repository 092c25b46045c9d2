package pgtransport

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/steadhq/stead"
)

// A claim that fails after it was sent may still have committed: the connection died while the
// server ran it or before its answer arrived (a server restart, a network cut), and the claimer
// cannot tell. Such a claim's groups would stay leased by a token no one holds until the lease
// ends, so every message in flight during an outage would wait out the claimers' visibility. The
// transport remembers the token of every such claim (tokens are unique per claim) and frees the
// groups still held by it as soon as the database answers again (transport_release), retrying
// with a growing, jittered pause until it succeeds or the lease has ended anyway.
//
// A claim inside the caller's transaction needs none of this: if its transaction did not
// commit, the server rolled the claim back with it.

// lostClaims are the tokens of claims whose outcome is unknown, with when each lease ends.
type lostClaims struct {
	mu      sync.Mutex
	tokens  map[string]time.Time
	running bool // the releaser goroutine is running
	wg      sync.WaitGroup
}

// claimFailed classifies the error of a claim through the pool and, unless the claim certainly
// never ran (nothing was sent, or the transport is closed), has its groups released.
func (b *Backend) claimFailed(token string, until time.Time, err error) error {
	err = fail("claim", err)
	if errors.Is(err, stead.ErrUnavailable) || errors.Is(err, stead.ErrClosed) {
		return err
	}
	b.lost.mu.Lock()
	defer b.lost.mu.Unlock()
	if b.closed.Load() {
		return err
	}
	if b.lost.tokens == nil {
		b.lost.tokens = map[string]time.Time{}
	}
	b.lost.tokens[token] = until
	if !b.lost.running {
		b.lost.running = true
		b.lost.wg.Go(b.releaseLost)
	}
	return err
}

// releaseLost frees the groups of the lost claims until none is left or the transport closes.
func (b *Backend) releaseLost() {
	ctx := b.stopCtx
	for failures := 0; ; {
		b.lost.mu.Lock()
		now := b.now()
		tokens := make([]string, 0, len(b.lost.tokens))
		for t, until := range b.lost.tokens {
			if now.After(until) {
				delete(b.lost.tokens, t) // the lease ended: the groups are claimable again
				continue
			}
			tokens = append(tokens, t)
		}
		if len(tokens) == 0 || ctx.Err() != nil {
			b.lost.running = false
			b.lost.mu.Unlock()
			return
		}
		b.lost.mu.Unlock()
		freed, err := b.release(ctx, tokens)
		if err == nil {
			b.lost.mu.Lock()
			for _, t := range tokens {
				delete(b.lost.tokens, t)
			}
			b.lost.mu.Unlock()
			if freed > 0 {
				b.cfg.log.Info("pgtransport: freed the groups of claims whose answer was lost",
					slog.Int("claims", len(tokens)), slog.Int("groups", freed))
			}
			failures = 0
			continue
		}
		failures++
		t := time.NewTimer(releasePause(failures))
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// release frees the groups held by tokens and returns how many it freed.
func (b *Backend) release(ctx context.Context, tokens []string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var freed int
	if err := b.pool.QueryRow(ctx, b.st.Release, tokens, b.notifyChannel()).Scan(&freed); err != nil {
		return 0, fail("release", err)
	}
	if freed > 0 {
		b.sig.Notify()
	}
	return freed, nil
}

// releasePause is the pause after the n-th failed release in a row: 50 ms doubled per failure,
// at most a second, jittered down by up to half.
func releasePause(n int) time.Duration {
	d := min(50*time.Millisecond<<min(n-1, 10), time.Second)
	return d/2 + rand.N(d/2+1)
}
