package rest

import (
	"strings"
	"sync"
	"time"
)

// operatingBucket is the length of one of the ten buckets of the portal's
// 10-minute operating-time window: a blocked method with no known reset
// time is tried again after this long.
const operatingBucket = time.Minute

// operating tracks, per method, the operating time the portal reports and
// when each method may be called again. The portal blocks a method for
// this webhook (429 OPERATION_TIME_LIMIT) once its running time over the
// last 10 minutes passes a limit (480 s in the documentation's example);
// other methods keep working, so only that method is paused.
type operating struct {
	limit    float64 // seconds
	headroom float64 // seconds below limit at which we stop calling

	mu      sync.Mutex
	methods map[string]*methodLoad
}

type methodLoad struct {
	seconds     float64   // last time.operating seen
	resetAt     time.Time // last time.operating_reset_at seen
	pausedUntil time.Time
}

func newOperating(limit, headroom time.Duration) *operating {
	return &operating{
		limit:    limit.Seconds(),
		headroom: headroom.Seconds(),
		methods:  make(map[string]*methodLoad),
	}
}

func (o *operating) load(method string) *methodLoad {
	method = strings.ToLower(method)
	m := o.methods[method]
	if m == nil {
		m = &methodLoad{}
		o.methods[method] = m
	}
	return m
}

// observe records the timing block of a successful answer. It returns the
// time until which the method is paused when the answer shows the method
// close enough to its limit that one more long call could cross it; the
// zero time otherwise.
func (o *operating) observe(method string, t Time, now time.Time) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.load(method)
	m.seconds = t.Operating
	if reset := t.ResetAt(); !reset.IsZero() {
		m.resetAt = reset
	}
	if o.limit <= 0 || m.seconds < o.limit-o.headroom {
		return time.Time{}
	}
	m.pausedUntil = o.nextWindow(m, now)
	return m.pausedUntil
}

// blocked records a 429 for the method and returns until when to pause it:
// the reset time from its last answer if that is still ahead, otherwise
// the next bucket's turn, as the documentation recommends.
func (o *operating) blocked(method string, now time.Time) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.load(method)
	m.pausedUntil = o.nextWindow(m, now)
	return m.pausedUntil
}

func (o *operating) nextWindow(m *methodLoad, now time.Time) time.Time {
	if m.resetAt.After(now) {
		return m.resetAt
	}
	return now.Add(operatingBucket)
}

// pausedUntil returns until when the method must not be called; a time in
// the past or the zero time means it may be called now.
func (o *operating) pausedUntil(method string) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.load(method).pausedUntil
}
