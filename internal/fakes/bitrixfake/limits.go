package bitrixfake

import "time"

// leakyBucket is the portal's request-intensity limit: every request adds
// one to the level, which drains at rate per second; a request that would
// take the level above burst is refused with 503 QUERY_LIMIT_EXCEEDED
// (and, being refused, adds nothing).
type leakyBucket struct {
	rate  float64
	burst float64
	level float64
	last  time.Time
}

func (b *leakyBucket) admit(now time.Time) bool {
	if b.rate <= 0 {
		return true
	}
	if !b.last.IsZero() {
		b.level = max(0, b.level-b.rate*now.Sub(b.last).Seconds())
	}
	b.last = now
	if b.level+1 > b.burst {
		return false
	}
	b.level++
	return true
}

// operatingWindow is the running time of one method over a sliding window
// made of fixed buckets (the portal: ten buckets of 60 s). The portal
// refuses the method with 429 OPERATION_TIME_LIMIT while the sum reaches
// its limit; the call that crosses the limit still completes.
type operatingWindow struct {
	buckets []operatingBucket
}

type operatingBucket struct {
	start   time.Time
	seconds float64
}

const (
	bucketLength = time.Minute
	bucketCount  = 10
	// minimalFixTime: calls shorter than this are not counted (SRV
	// LoadLimiter $minimalFixTime = 0.1).
	minimalFixTime = 0.1
)

func (w *operatingWindow) expire(now time.Time) {
	keep := w.buckets[:0]
	for _, b := range w.buckets {
		if now.Sub(b.start) < bucketCount*bucketLength {
			keep = append(keep, b)
		}
	}
	w.buckets = keep
}

func (w *operatingWindow) sum(now time.Time) float64 {
	w.expire(now)
	total := 0.0
	for _, b := range w.buckets {
		total += b.seconds
	}
	return total
}

func (w *operatingWindow) add(now time.Time, seconds float64) {
	if seconds < minimalFixTime {
		return
	}
	start := now.Truncate(bucketLength)
	if n := len(w.buckets); n > 0 && w.buckets[n-1].start.Equal(start) {
		w.buckets[n-1].seconds += seconds
		return
	}
	w.buckets = append(w.buckets, operatingBucket{start, seconds})
}

// resetAt is when the oldest bucket leaves the window; zero if none.
func (w *operatingWindow) resetAt(now time.Time) time.Time {
	w.expire(now)
	if len(w.buckets) == 0 {
		return time.Time{}
	}
	return w.buckets[0].start.Add(bucketCount * bucketLength)
}
