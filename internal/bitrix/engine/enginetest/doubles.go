package enginetest

import (
	"context"
	"sync"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/importapi"
)

// CancelOnCall stops a get during its Nth request for pages of an ID-chained scan, as a crash
// or a SIGTERM would: the pages of that request are never stored.
type CancelOnCall struct {
	engine.Source
	N      int
	Cancel context.CancelFunc

	mu    sync.Mutex
	calls int
}

// ScanSegments cancels on the Nth call and passes the others on.
func (c *CancelOnCall) ScanSegments(ctx context.Context, s rest.Scan, segs []rest.Segment) ([][]rest.Page, error) {
	c.mu.Lock()
	c.calls++
	stop := c.calls == c.N
	c.mu.Unlock()
	if stop {
		c.Cancel()
		return nil, context.Cause(ctx)
	}
	return c.Source.ScanSegments(ctx, s, segs)
}

// StopListing stops an offset get once Pages pages were stored, as a crash would.
type StopListing struct {
	engine.Source
	Pages  int
	Cancel context.CancelFunc
}

// ListByStart passes the pages on and cancels after the Pages-th.
func (s *StopListing) ListByStart(ctx context.Context, l rest.List, start int, fn func(rest.Page) error) error {
	n := 0
	return s.Source.ListByStart(ctx, l, start, func(p rest.Page) error {
		if err := fn(p); err != nil {
			return err
		}
		if n++; n == s.Pages {
			s.Cancel()
		}
		return nil
	})
}

// ImportCall is one import call a RecordingTarget saw.
type ImportCall struct {
	Entity string
	Keys   []string
}

// RecordingTarget notes every import call, its entity and keys, in order.
type RecordingTarget struct {
	engine.Target

	mu    sync.Mutex
	calls []ImportCall
}

// Import notes the call and passes it on.
func (r *RecordingTarget) Import(ctx context.Context, entity string, items []importapi.Item) ([]importapi.Result, error) {
	call := ImportCall{Entity: entity}
	for _, it := range items {
		call.Keys = append(call.Keys, it.Key)
	}
	r.mu.Lock()
	r.calls = append(r.calls, call)
	r.mu.Unlock()
	return r.Target.Import(ctx, entity, items)
}

// Calls returns the calls so far.
func (r *RecordingTarget) Calls() []ImportCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ImportCall(nil), r.calls...)
}

// Clock is a clock that moves only when something sleeps on it: retries wait no real time.
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

// NewClock returns a clock standing at now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep notes the wait and moves the clock by d at once.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

// Waits returns every wait so far, in order.
func (c *Clock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}
