package dispatch

import (
	"math/rand/v2"
	"time"
)

// Backoff is the retry schedule: after the n-th failed attempt (n from 1) the row is due again
// after
//
//	d(n) = min(Max, Initial × 2^(n-1)), less a random part of up to Jitter × d(n)
//
// so the delay doubles from Initial up to the cap, and never exceeds it; the jitter only ever
// shortens a delay, spreading the retries of rows that failed together (a destination that was
// down) without pushing any past the cap. With DefaultBackoff: about 1 s, 2 s, 4 s, 8 s … up to
// 10 min, each up to 20 % earlier.
type Backoff struct {
	Initial time.Duration // the first delay (default 1 s)
	Max     time.Duration // the cap (default 10 min)
	Jitter  float64       // in [0, 1): the largest share of a delay taken off at random (default 0.2)
}

// DefaultBackoff is the schedule a zero Config.Backoff takes.
var DefaultBackoff = Backoff{Initial: time.Second, Max: 10 * time.Minute, Jitter: 0.2}

// withDefaults fills the zero fields from DefaultBackoff.
func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = DefaultBackoff.Initial
	}
	if b.Max <= 0 {
		b.Max = max(DefaultBackoff.Max, b.Initial)
	}
	if b.Jitter <= 0 || b.Jitter >= 1 {
		b.Jitter = DefaultBackoff.Jitter
	}
	return b
}

// Delay returns the delay after the n-th failed attempt (n < 1 counts as 1), drawing the jitter
// from random, a source of uniform numbers in [0, 1) (nil: math/rand/v2).
func (b Backoff) Delay(n int, random func() float64) time.Duration {
	b = b.withDefaults()
	if random == nil {
		random = rand.Float64
	}
	d := b.Max
	if n < 1 {
		n = 1
	}
	// Doubling Initial n-1 times reaches the cap long before it could overflow.
	if shift := n - 1; shift < 62 && b.Initial <= b.Max>>shift {
		d = b.Initial << shift
	}
	return d - time.Duration(b.Jitter*random()*float64(d))
}
