package bitrix_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// inFlight counts, per method, the most batches of that method the portal had in flight at once.
type inFlight struct {
	engine.Source
	mu       sync.Mutex
	now, max map[string]int
}

func (f *inFlight) Batch(ctx context.Context, cmds []rest.Command, halt bool) (*rest.BatchResult, error) {
	m := ""
	if len(cmds) > 0 {
		m = cmds[0].Method
	}
	f.mu.Lock()
	f.now[m]++
	f.max[m] = max(f.max[m], f.now[m])
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.now[m]--
		f.mu.Unlock()
	}()
	return f.Source.Batch(ctx, cmds, halt)
}

// A page of tasks' checklist batches go at once: a small portal read in one ID range does not
// fetch them one after another (issue 21: 2k tasks took 3.7x their floor).
func TestGetFetchesAPagesChildBatchesAtOnce(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 50, Groups: 5, Tasks: 400, Seed: 2, Latency: 30 * time.Millisecond})
	src := &inFlight{Source: v.source, now: map[string]int{}, max: map[string]int{}}
	e := v.engine(func(c *engine.Config) { c.Source = src })
	if _, err := e.Get(v.ctx, bitrix.Tasks); err != nil {
		t.Fatal(err)
	}
	if got := src.max["task.checklistitem.getlist"]; got < 2 {
		t.Errorf("at most %d checklist batch in flight at once, want the page's batches together", got)
	}
}
