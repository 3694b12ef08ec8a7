package engine

import (
	"context"
)

// Verify's source counts come from the get of the same run wherever it read one: a pass that
// read a listing whole from its first page took the listing's total on the way (the first
// page's, the bounds', its ID ranges' counts added up for a delta pass), and asking the portal
// again minutes later costs a request per entity on a rerun that has nothing else to read. A
// count is kept in Engine.counted by scope (an entity's name, or a scan's Scope) with the pass
// it was read in, and is taken only while that pass is the scope's latest and complete: a pass
// resumed, limited or cut short in this run records nothing, and verify asks as before.

// runCount is a count of the portal's that a pass of this run read: n records in the scope,
// read by pass of its inventory.
type runCount struct {
	pass int
	n    int64
}

// noteListed records total as the scope's count for verify when the pass of this run that read
// it has read the whole listing: total is the listing's own (not an estimate), the pass started
// in this run rather than resumed, no test_limit cut it, and the inventory says it is complete.
// Otherwise it forgets the scope's count, so that verify asks the portal.
func (e *Engine) noteListed(ctx context.Context, scope string, total *int64, resumed bool) error {
	if total == nil || resumed || e.testLimit > 0 {
		e.counted.Delete(scope)
		return nil
	}
	inv, err := e.store().loadInventory(ctx, scope)
	if err != nil {
		return err
	}
	if !inv.Complete || inv.Limit != nil || inv.Pass == 0 {
		e.counted.Delete(scope)
		return nil
	}
	e.counted.Store(scope, runCount{pass: inv.Pass, n: *total})
	return nil
}

// runTotal is the scope's count read by a pass of this run, when that pass is still the scope's
// latest and complete (a later pass, interrupted, has not replaced it).
func (e *Engine) runTotal(ctx context.Context, scope string) (int64, bool, error) {
	v, ok := e.counted.Load(scope)
	if !ok {
		return 0, false, nil
	}
	c := v.(runCount)
	inv, err := e.store().loadInventory(ctx, scope)
	if err != nil {
		return 0, false, err
	}
	if inv.Pass != c.pass || !inv.Complete {
		return 0, false, nil
	}
	return c.n, true, nil
}

// NoteListed records, for an entity's own lister (one the engine does not provide), the
// portal's count of a scope its get just read whole in this run: total is what the listing
// counts (or what the pass read of a listing it read to its end), resumed whether the pass
// was begun by an earlier run. Verify in the same run then takes it (ListedCount, and as the
// entity's source count) instead of asking the portal again. A pass that did not read the whole
// listing in this run calls it with a nil total, or not at all.
func (v Env) NoteListed(ctx context.Context, scope string, total *int64, resumed bool) error {
	return v.e.noteListed(ctx, scope, total, resumed)
}

// ListedCount is the portal's count of a scope that a pass of this run read whole (NoteListed,
// the engine's listers), if there is one: an entity's own checks use it before asking the
// portal.
func (v Env) ListedCount(ctx context.Context, scope string) (int64, bool, error) {
	return v.e.runTotal(ctx, scope)
}
