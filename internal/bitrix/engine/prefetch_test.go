package engine_test

import (
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// A rerun's prefetch asks the passes' first commands up front: the gets that follow send fewer
// requests, the prefetch and they together fewer than the gets alone, and they store what gets
// without it store. Once done, nothing asked ahead is served: a get asks for itself again.
func TestPrefetchServesARerunOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 700, Groups: 60, Posts: 40, Tasks: 120, Companies: 90, Workflows: 3, Seed: 35})
	e := w.Engine()
	gets := func(what string) int {
		t.Helper()
		before := w.Portal.Stats().Requests
		for _, ent := range w.Registry.Commands() {
			if _, err := e.Get(w.Ctx, ent.Name); err != nil {
				t.Fatalf("%s: get %s: %v", what, ent.Name, err)
			}
		}
		return w.Portal.Stats().Requests - before
	}
	records := func() int {
		return w.Count(`SELECT count(*) FROM bitrix_records WHERE status NOT IN ('DELETED_AT_SOURCE', 'DELETED_ON_TARGET')`)
	}
	gets("the first pass")
	alone := gets("a rerun without prefetch")
	stored := records()

	before := w.Portal.Stats().Requests
	done, err := e.Prefetch(w.Ctx, engine.MigrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prefetch := w.Portal.Stats().Requests - before
	served := gets("a rerun after the prefetch")
	done()
	if prefetch == 0 || served >= alone || prefetch+served >= alone {
		t.Errorf("a rerun sent %d requests alone; with the prefetch %d, then %d: want fewer, and fewer in all", alone, prefetch, served)
	}
	if got := records(); got != stored {
		t.Errorf("after the prefetched rerun %d records live, before it %d", got, stored)
	}
	if again := gets("a rerun once the prefetch is done"); again != alone {
		t.Errorf("a rerun after the prefetch was dropped sent %d requests, one without it %d: answers outlived their run", again, alone)
	}
}
