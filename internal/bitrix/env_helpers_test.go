package bitrix_test

import (
	"context"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// The helpers below stayed when the engine's mechanism tests moved to internal/bitrix/engine:
// the entities' own tests still use them.

func (v *env) inventory(entity string) engine.Inventory {
	v.t.Helper()
	rep, err := v.engine().Report(v.ctx)
	if err != nil {
		v.t.Fatal(err)
	}
	for _, es := range rep.Entities {
		if es.Entity == entity && es.Inventory != nil {
			return *es.Inventory
		}
	}
	v.t.Fatalf("no inventory for %s", entity)
	return engine.Inventory{}
}

// cancelOnCall stops a get during its nth request for pages, as a crash or a SIGTERM would: the
// pages of that request are never stored.
type cancelOnCall struct {
	engine.Source
	n      int
	cancel context.CancelFunc
	calls  int
}

func (c *cancelOnCall) ScanSegments(ctx context.Context, s rest.Scan, segs []rest.Segment) ([][]rest.Page, error) {
	if c.calls++; c.calls == c.n {
		c.cancel()
		return nil, context.Cause(ctx)
	}
	return c.Source.ScanSegments(ctx, s, segs)
}

// targetID returns the target id a record was imported under.
func (v *env) targetID(entity, sourceID string) string {
	v.t.Helper()
	var id string
	if err := v.pool.QueryRow(v.ctx, `SELECT target_id FROM bitrix_id_map WHERE entity = $1 AND source_id = $2`, entity, sourceID).Scan(&id); err != nil {
		v.t.Fatalf("target id of %s %s: %v", entity, sourceID, err)
	}
	return id
}
