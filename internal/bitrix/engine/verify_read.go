package engine

import (
	"context"
	"fmt"
)

// verifyCountsRead is verifyCounts of an entity the portal cannot count (Entity.CountRead):
// the records get read that are in reach stand for the source. Records out of reach are not in
// the source's count, so only the readable ones a person acknowledged are subtracted from what
// the target should hold.
func (e *Engine) verifyCountsRead(ctx context.Context, k *Entity, r *VerifyReport) error {
	var err error
	if r.SourceCount, err = e.store().countReachable(ctx, k); err != nil {
		return err
	}
	acked, err := e.store().countExcusedReachable(ctx, k)
	if err != nil {
		return err
	}
	r.Expected = r.SourceCount - acked
	inv, err := e.store().loadInventory(ctx, k.Name)
	if err != nil {
		return err
	}
	r.TestLimit = inv.Limit
	if r.TargetCount, err = e.target.Count(ctx, k.Name); err != nil {
		return fmt.Errorf("verify %s: %w", k.Name, err)
	}
	if r.TargetCount != r.Expected {
		r.Problem("target holds %d %s, expected %d", r.TargetCount, k.Name, r.Expected)
	}
	byStatus, _, err := e.store().countByStatus(ctx, k.Name)
	if err != nil {
		return err
	}
	for st, n := range byStatus {
		r.ByStatus[st] = n
	}
	issues, err := e.store().unimported(ctx, k)
	if err != nil {
		return err
	}
	if len(issues) > 0 {
		r.Problem("%d readable %s are not IMPORT_OK", len(issues), k.noun())
		r.NotImported = issues[:min(len(issues), MaxListed)]
	}
	return nil
}
