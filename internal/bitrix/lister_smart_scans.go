package bitrix

import (
	"context"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// Scans makes smartItems an engine.ScanLister: each smart process type is read by an ID scan of
// its own, whose pass may be delta while another type's is full, so deletions are concluded
// type by type (engine/deletions_delta.go). The types are those crm_types stored: no request.
func (smartItems) Scans(ctx context.Context, env engine.Env, _ *engine.Entity) ([]*engine.IDScan, error) {
	types, err := smartTypeIDs(ctx, env)
	if err != nil {
		return nil, err
	}
	out := make([]*engine.IDScan, len(types))
	for i, et := range types {
		out[i] = smartScan(et)
	}
	return out, nil
}
