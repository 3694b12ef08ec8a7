package bitrixfake

import (
	"context"
	"sync"
	"time"
)

// Clock is a manual clock: time stands still until Advance or Sleep moves
// it. Give the same Clock to the portal (Options.Now) and to the client
// under test (its Now and Sleep) and every wait for a rate or operating
// limit happens instantly and deterministically.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock showing start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Sleep advances the clock by d instead of waiting, unless ctx is done.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	if d > 0 {
		c.Advance(d)
	}
	return nil
}

// Accelerated returns a clock that runs factor times faster than real time
// from the moment of the call. A portal on it drains its leaky bucket and
// ages its operating-time window factor times faster, so a benchmark can
// replay an hour of portal time in a minute. Pair it with a client limiter
// whose rate is multiplied by the same factor.
func Accelerated(factor float64) func() time.Time {
	start := time.Now()
	return func() time.Time {
		return start.Add(time.Duration(float64(time.Since(start)) * factor))
	}
}
