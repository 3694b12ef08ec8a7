package engine_test

import (
	"sync"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
)

// TestKeyWalkLeavesSettledKeysOut: after a complete pass, a new pass asks Settled of every key
// with where its walk ended ("done"), walks those it says are not settled, and sends nothing for
// the others; their records stay as they were (a settled key's records are not concluded
// deleted: the walk's entity is concluded with its parent).
func TestKeyWalkLeavesSettledKeysOut(t *testing.T) {
	t.Parallel()
	const method = "log.blogcomment.user.get"
	ent := remarksEntity()
	w := refusedWorld(t, ent)
	e := w.Engine()
	if st, err := e.Get(w.Ctx, enginetest.Posts); err != nil || !st.Complete {
		t.Fatalf("first get: %+v, %v", st, err)
	}
	stored := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = $1 AND status <> 'DELETED_AT_SOURCE'`, remarks)
	keys := w.Count(`SELECT count(DISTINCT split_part(cursor, ' ', 1)) FROM bitrix_page_log WHERE entity = $1`, remarks)

	var mu sync.Mutex
	asked := map[string]string{}
	ent.Walk.(*engine.KeyWalk).Settled = func(key, last string) bool {
		mu.Lock()
		defer mu.Unlock()
		asked[key] = last
		return len(asked)%2 == 0 // every other key has nothing new
	}
	before := w.Portal.Stats().Calls[method]
	if st, err := e.Get(w.Ctx, enginetest.Posts); err != nil || !st.Complete {
		t.Fatalf("second get: %+v, %v", st, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != keys {
		t.Errorf("Settled asked of %d keys, want every one of the %d walked before", len(asked), keys)
	}
	for key, last := range asked {
		if last != "done" {
			t.Errorf("Settled(%s, %q), want where its walk ended: done", key, last)
		}
	}
	if calls := w.Portal.Stats().Calls[method] - before; calls < keys-keys/2 || calls >= keys {
		t.Errorf("the second pass sent %d %s, want one or more for each of the %d keys not settled and none for the others",
			calls, method, keys-keys/2)
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = $1 AND status <> 'DELETED_AT_SOURCE'`, remarks); n != stored {
		t.Errorf("%d remarks stored after the second pass, want the %d of the first", n, stored)
	}
}
