package engine_test

import (
	"context"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// TestNoDeltaOf: a scan with modification fields may run a delta pass; a scan without, an
// offset listing and a lister that does not say are full, each with a reason, their own first.
func TestNoDeltaOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		lister engine.Lister
		want   string
	}{
		{"scan with modification fields", &engine.IDScan{Scan: rest.Scan{Method: "crm.item.list"}, Modified: []string{"updatedTime"}}, ""},
		{"scan without", &engine.IDScan{Scan: rest.Scan{Method: "user.get"}}, "user.get has no modification filter"},
		{"scan that says why", &engine.IDScan{Scan: rest.Scan{Method: "user.get"}, Unfiltered: "because"}, "because"},
		{"offset pages", &engine.OffsetPages{List: rest.List{Method: "crm.type.list"}}, "crm.type.list is read by offset, every page each pass"},
		{"offset pages that say why", &engine.OffsetPages{List: rest.List{Method: "crm.type.list"}, Unfiltered: "one page"}, "one page"},
		{"a lister that does not say", silentLister{}, "the entity's lister reads every record each pass (no modification filter)"},
	} {
		if got := engine.NoDeltaOf(c.lister); got != c.want {
			t.Errorf("%s: NoDeltaOf = %q, want %q", c.name, got, c.want)
		}
	}
}

// silentLister is a Lister that does not say whether it can read by modification time.
type silentLister struct{}

func (silentLister) Get(context.Context, *engine.GetRun) error { return nil }
func (silentLister) Total(context.Context, engine.Env, *engine.Entity) (int64, error) {
	return 0, engine.ErrNoTotal
}
func (silentLister) Plan(context.Context, engine.Env, *engine.Entity) ([]engine.EntityPlan, error) {
	return nil, nil
}
