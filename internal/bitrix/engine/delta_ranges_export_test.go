package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// DeltaGet gets an entity listed by ID scans (an IDScan, or a ScanLister's scans: those of the
// scopes named, or all) as delta passes whose modification-filter scans returned nothing: each
// scan's pass is started and marked delta as IDScan.begin does for a delta pass, then its counts
// and re-listing (relistChanged) run, then the get's conclusion. It is the tests' way into
// delta_ranges.go without the delta pass's own scans; its zone comes from sourceZone (one probe
// request when the engine has no SourceZone). An interrupted DeltaGet is resumed by Get, as any
// interrupted pass is.
func (e *Engine) DeltaGet(ctx context.Context, entity string, scopes ...string) (GetStats, error) {
	st := GetStats{Counts: map[string]*GetCounts{}}
	ent, err := e.registry.Command(entity)
	if err != nil {
		return st, err
	}
	scans, err := e.scansOf(ctx, ent)
	if err != nil || len(scans) == 0 {
		return st, fmt.Errorf("%s is not listed by ID scans (%v)", entity, err)
	}
	for _, s := range scans {
		if len(scopes) > 0 && !slices.Contains(scopes, s.scope(ent)) {
			continue
		}
		if s, err = s.prepared(ctx, e, ent); err != nil {
			return st, err
		}
		d := PassDecision{Kind: PassDelta, Reason: "a delta pass started by a test", Since: e.now()}
		var inv Inventory
		err = pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
			if inv, err = NewStore(tx).startPass(ctx, s.scope(ent), e.testLimit); err != nil {
				return err
			}
			return NewStore(tx).markPass(ctx, s.scope(ent), d, e.now(), "test")
		})
		if err != nil {
			return st, err
		}
		zone, err := e.sourceZone(ctx, ent.Name, s.Scan)
		if err != nil {
			return st, err
		}
		g := &GetRun{Env: e.env(), Ent: ent, Stats: &st, Start: e.now(), Pass: d}
		st.Pass = inv.Pass
		w := &rangeWalk{g: g, scan: s, zone: zone, pass: inv.Pass, before: inv.PassRows}
		if err := s.relistChanged(ctx, w); err != nil {
			return st, err
		}
	}
	st.Deleted, err = e.concludeDeletions(ctx, ent)
	return st, err
}
