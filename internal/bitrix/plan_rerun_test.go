package bitrix_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// TestTasksPlanHoldsBeforeAndAfterPartialGets plans the tasks (with their checklists and
// comments of both card generations) before their get, after an interrupted one and after the
// complete one: every plan is within 2% of the requests get sends. Once tasks are stored, the
// comments of a task with a chat are the chat walk's; the per-task comment fetch is not planned
// for it too.
func TestTasksPlanHoldsBeforeAndAfterPartialGets(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 100, Groups: 10, Tasks: 3_000, TaskComments: 1, Seed: 21})
	for _, ent := range []string{bitrix.Users, bitrix.Groups} {
		if _, err := v.engine().Get(v.ctx, ent); err != nil {
			t.Fatal(err)
		}
	}
	family := bitrix.Catalog().Family(mustEntity(t, bitrix.Tasks))
	plan := func(when string) int {
		t.Helper()
		p, err := v.engine().Plan(v.ctx, rest.DefaultRate())
		if err != nil {
			t.Fatalf("plan %s: %v", when, err)
		}
		calls := 0
		for _, ep := range p.Entities {
			for _, member := range family {
				if ep.Entity == member.Name {
					calls += ep.Calls
				}
			}
		}
		return calls
	}
	// get sends what the rest client counts while it runs (the plans between are not counted).
	get := func(ctx context.Context, e *engine.Engine) (int, error) {
		start := v.source.Stats().Requests
		_, err := e.Get(ctx, bitrix.Tasks)
		return int(v.source.Stats().Requests - start), err
	}

	before := plan("before get")
	ctx, cancel := context.WithCancel(v.ctx)
	defer cancel()
	e := v.engine(func(c *engine.Config) {
		c.Concurrency = 1 // the ranges one after another: those before the interruption are stored
		c.Source = &cancelOnCall{Source: v.source, n: 2, cancel: cancel}
	})
	whole, err := get(ctx, e)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted get = %v, want context.Canceled", err)
	}
	stored := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'tasks'`)
	if stored == 0 || stored == 3_000 {
		t.Fatalf("the interrupted get stored %d tasks, want some", stored)
	}
	partial := plan("after a partial get")
	resumed, err := get(v.ctx, v.engine())
	if err != nil {
		t.Fatal(err)
	}
	whole += resumed
	after := plan("after the get")
	// The plan foretells a full pass; the rerun would otherwise be a delta one.
	again, err := get(v.ctx, v.engine(func(c *engine.Config) { c.Full = true }))
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		when          string
		planned, sent int
	}{
		{"before get", before, whole},
		{"after a partial get", partial, whole},
		{"after the get, for the next one", after, again},
	} {
		t.Logf("%s: planned %d calls, get sent %d", c.when, c.planned, c.sent)
		if off := math.Abs(float64(c.planned-c.sent)) / float64(c.sent); off > 0.02 {
			t.Errorf("plan %s: %d calls, get sent %d (%.1f%% off, want within 2%%)", c.when, c.planned, c.sent, 100*off)
		}
	}
}
