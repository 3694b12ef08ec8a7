package bitrix_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// ScanSegments counts an ID-range request under "scan".
func (f *inFlight) ScanSegments(ctx context.Context, s rest.Scan, segs []rest.Segment) ([][]rest.Page, error) {
	f.mu.Lock()
	f.now["scan"]++
	f.max["scan"] = max(f.max["scan"], f.now["scan"])
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.now["scan"]--
		f.mu.Unlock()
	}()
	return f.Source.ScanSegments(ctx, s, segs)
}

// TestGetHoldsTheAnswersItsMemoryLimitAllows reads a portal whose ranges would all go at once,
// with a memory limit that holds one answer: the requests go one at a time and every row is
// stored, in a new pass (sized by its first page) and in a resumed one (sized by the rows stored).
func TestGetHoldsTheAnswersItsMemoryLimitAllows(t *testing.T) {
	t.Parallel()
	const users = 6_010
	v := newEnv(t, bitrixfake.Options{Users: users, Seed: 5})

	free := &inFlight{Source: v.source, now: map[string]int{}, max: map[string]int{}}
	e := v.engine(func(c *engine.Config) {
		c.Source = free
	})
	if _, err := e.Get(v.ctx, bitrix.Users); err != nil {
		t.Fatal(err)
	}
	if free.max["scan"] < 2 {
		t.Fatalf("without a memory limit at most %d request in flight: the test proves nothing", free.max["scan"])
	}

	v = newEnv(t, bitrixfake.Options{Users: users, Seed: 5})
	ctx, cancel := context.WithCancel(v.ctx)
	defer cancel()
	e = v.engine(func(c *engine.Config) {
		c.Concurrency = 1
		c.Source = &cancelOnCall{Source: v.source, n: 2, cancel: cancel}
	})
	if _, err := e.Get(ctx, bitrix.Users); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted get = %v, want context.Canceled", err)
	}
	for _, resumed := range []bool{true, false} {
		tight := &inFlight{Source: v.source, now: map[string]int{}, max: map[string]int{}}
		e = v.engine(func(c *engine.Config) {
			c.Source, c.MemoryLimit = tight, 1<<20 // 512 KiB for answers: less than one of 2,500 users
		})
		st, err := e.Get(v.ctx, bitrix.Users)
		if err != nil {
			t.Fatal(err)
		}
		if st.Resumed != resumed || !st.Complete {
			t.Fatalf("get = %+v, want resumed %v and complete", st, resumed)
		}
		if tight.max["scan"] != 1 {
			t.Errorf("resumed %v: %d requests in flight at once, want 1 under the memory limit", resumed, tight.max["scan"])
		}
		if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'users'`); n != users {
			t.Errorf("%d users stored, want %d", n, users)
		}
	}
}
