package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// scansInFlight is a source that counts the ID-range requests in flight at once, and their most.
type scansInFlight struct {
	engine.Source
	mu       sync.Mutex
	now, max int
}

func (f *scansInFlight) ScanSegments(ctx context.Context, s rest.Scan, segs []rest.Segment) ([][]rest.Page, error) {
	f.mu.Lock()
	f.now++
	f.max = max(f.max, f.now)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.now--
		f.mu.Unlock()
	}()
	return f.Source.ScanSegments(ctx, s, segs)
}

// TestGetHoldsTheAnswersItsMemoryLimitAllows reads a portal whose ranges would all go at once,
// with a memory limit that holds one answer: the requests go one at a time and every row is
// stored, in a new pass (sized by its first page) and in a resumed one (sized by the rows stored).
func TestGetHoldsTheAnswersItsMemoryLimitAllows(t *testing.T) {
	t.Parallel()
	const people = 6_010
	opts := enginetest.Options{Portal: bitrixfake.Options{Users: people, Seed: 5}}
	w := enginetest.New(t, opts)

	free := &scansInFlight{Source: w.Source}
	if _, err := w.Engine(func(e *engine.Config) { e.Source = free }).Get(w.Ctx, enginetest.People); err != nil {
		t.Fatal(err)
	}
	if free.max < 2 {
		t.Fatalf("without a memory limit at most %d request in flight: the test proves nothing", free.max)
	}

	w = enginetest.New(t, opts)
	ctx, cancel := context.WithCancel(w.Ctx)
	defer cancel()
	e := w.Engine(func(e *engine.Config) {
		e.Concurrency = 1
		e.Source = &enginetest.CancelOnCall{Source: w.Source, N: 2, Cancel: cancel}
	})
	if _, err := e.Get(ctx, enginetest.People); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted get = %v, want context.Canceled", err)
	}
	for _, resumed := range []bool{true, false} {
		tight := &scansInFlight{Source: w.Source}
		e := w.Engine(func(e *engine.Config) {
			e.Source, e.MemoryLimit = tight, 1<<20 // 512 KiB for answers: less than one of 2,500 users
		})
		st, err := e.Get(w.Ctx, enginetest.People)
		if err != nil {
			t.Fatal(err)
		}
		if st.Resumed != resumed || !st.Complete {
			t.Fatalf("get = %+v, want resumed %v and complete", st, resumed)
		}
		if tight.max != 1 {
			t.Errorf("resumed %v: %d requests in flight at once, want 1 under the memory limit", resumed, tight.max)
		}
		if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = $1`, enginetest.People); n != people {
			t.Errorf("%d people stored, want %d", n, people)
		}
	}
}
