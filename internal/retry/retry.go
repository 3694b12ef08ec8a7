// Package retry runs an operation again after transient failures, waiting a
// fixed schedule of delays with random jitter in between.
//
// The schedule is explicit rather than computed (exponential and so on)
// because the migration specs state it literally: three retries after the
// first attempt, waiting 0 s, 2 s and 6 s plus jitter.
package retry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Policy is a retry schedule. The zero value never retries.
type Policy struct {
	// Delays holds the wait before each retry: Delays[0] before the first
	// retry, Delays[1] before the second, and so on. Its length is the
	// number of retries after the first attempt.
	Delays []time.Duration

	// Jitter is the largest extra wait, as a fraction of the delay, added at
	// random to every delay (0.2 turns 2 s into somewhere in [2 s, 2.4 s)).
	// Jitter only ever lengthens a wait so that a delay is also a minimum;
	// a zero delay stays zero.
	Jitter float64

	// Sleep waits for d or until ctx is done. Nil means a real timer; tests
	// and callers with their own clock replace it.
	Sleep func(ctx context.Context, d time.Duration) error

	// Rand returns a number in [0, 1) for the jitter. Nil means math/rand/v2.
	Rand func() float64
}

// Default returns the schedule of the migration specs: 3 retries after
// 0 s, 2 s and 6 s, each plus up to 20% jitter.
func Default() Policy {
	return Policy{
		Delays: []time.Duration{0, 2 * time.Second, 6 * time.Second},
		Jitter: 0.2,
	}
}

// MaxRetries reports how many times an operation is retried after its first
// attempt.
func (p Policy) MaxRetries() int { return len(p.Delays) }

// Delay returns the wait before retry number attempt (1 for the first retry),
// jitter included. Attempts past the end of the schedule reuse its last
// delay, so a caller that keeps its own count (for example a record in
// ERROR_RETRY) never gets a zero wait by overrunning; compare with
// MaxRetries to decide when to give up.
func (p Policy) Delay(attempt int) time.Duration {
	if len(p.Delays) == 0 {
		return 0
	}
	i := min(max(attempt, 1), len(p.Delays)) - 1
	d := p.Delays[i]
	if p.Jitter <= 0 || d <= 0 {
		return d
	}
	r := rand.Float64
	if p.Rand != nil {
		r = p.Rand
	}
	return d + time.Duration(float64(d)*p.Jitter*r())
}

// Do calls fn until it succeeds, returns an error isRetryable rejects, the
// schedule runs out, or ctx is done. onRetry, if not nil, is told about each
// retry before its wait: the retry number (1-based), the error that caused
// it and the wait. isRetryable nil means every error is retried.
//
// The returned error is the last one fn returned, wrapped with the number of
// attempts when retries were exhausted, so errors.Is and errors.As still see
// it; if ctx ends during a wait, the context's error is returned joined with
// the last failure.
func (p Policy) Do(
	ctx context.Context,
	fn func(ctx context.Context) error,
	isRetryable func(error) bool,
	onRetry func(attempt int, err error, wait time.Duration),
) error {
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if isRetryable != nil && !isRetryable(err) {
			return err
		}
		if ctx.Err() != nil {
			return err
		}
		if attempt > p.MaxRetries() {
			return fmt.Errorf("gave up after %d attempts: %w", attempt, err)
		}
		wait := p.Delay(attempt)
		if onRetry != nil {
			onRetry(attempt, err, wait)
		}
		if serr := p.sleep(ctx, wait); serr != nil {
			return fmt.Errorf("%w (while waiting to retry after: %w)", serr, err)
		}
	}
}

func (p Policy) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	return Sleep(ctx, d)
}

// Sleep waits for d or until ctx is done, whichever comes first, and returns
// the context's cause in the latter case.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
