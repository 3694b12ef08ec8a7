package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// TestRefusedKeysAreLostOrFailTheWalk: the portal refuses the first pages of some authors'
// remarks (ACCESS_ERROR, as it refuses a conversation the webhook's user is not in). A walk that
// records lost keys (KeyWalk.Lost) ends each refused key's walk there, hands the refusal to the
// entity, and completes the pass; one that does not fails the get naming the method and the
// refusal, and a rerun, the portal answering again, converges.
func TestRefusedKeysAreLostOrFailTheWalk(t *testing.T) {
	t.Parallel()
	const refused = 3
	method := "log.blogcomment.user.get"
	t.Run("lost", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		lost := map[string]engine.Unreachable{}
		ent := remarksEntity()
		ent.Walk.(*engine.KeyWalk).Lost = func(_ context.Context, _ engine.Store, key string, u *engine.Unreachable, _ *time.Location) error {
			mu.Lock()
			defer mu.Unlock()
			lost[key] = *u
			return nil
		}
		w := refusedWorld(t, ent)
		w.Portal.FailCommands(method, "ACCESS_ERROR", refused)
		st, err := w.Engine().Get(w.Ctx, enginetest.Posts)
		if err != nil || !st.Complete {
			t.Fatalf("get with %d keys refused: %+v, %v; want a complete pass", refused, st, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(lost) != refused {
			t.Fatalf("%d keys handed to Lost (%v), want the %d refused", len(lost), lost, refused)
		}
		for key, u := range lost {
			if u.Method != method || u.Code != "ACCESS_ERROR" {
				t.Errorf("key %s lost as %+v, want %s's ACCESS_ERROR", key, u, method)
			}
		}
	})
	t.Run("fails", func(t *testing.T) {
		t.Parallel()
		w := refusedWorld(t, remarksEntity())
		w.Portal.FailCommands(method, "ACCESS_ERROR", 1)
		e := w.Engine()
		if _, err := e.Get(w.Ctx, enginetest.Posts); err == nil || !strings.Contains(err.Error(), method) ||
			!strings.Contains(err.Error(), "ACCESS_ERROR") {
			t.Fatalf("get with keys refused and no Lost: %v, want it to fail naming %s and the refusal", err, method)
		}
		st, err := e.Get(w.Ctx, enginetest.Posts)
		if err != nil || !st.Complete || st.Of(remarks).Rows == 0 {
			t.Fatalf("rerun: %+v, %v; want a complete pass that read the remarks", st, err)
		}
	})
}

// refusedWorld is a world with the synthetic entities and ent (the remarks), the people and the
// teams migrated.
func refusedWorld(t *testing.T, ent *engine.Entity) *enginetest.World {
	t.Helper()
	reg, err := engine.NewRegistry(append(enginetest.Entities(), ent)...)
	if err != nil {
		t.Fatal(err)
	}
	w := enginetest.New(t, enginetest.Options{Registry: reg,
		Portal: bitrixfake.Options{Users: 20, Groups: 3, Posts: 40, PostComments: 4, Seed: 47}})
	w.Migrate(w.Engine(), enginetest.People, enginetest.Teams)
	return w
}
