package engine

import (
	"context"
	"fmt"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// Prefetch makes IDScan a Prefetcher (prefetch.go). A new pass begins with the listing's bounds
// (round 1). Round 2 decides the pass as begin will, by the bounds' answer (the portal's clock,
// compared with this machine's when that answer arrived): a delta pass then sends each
// modification field's filtered bounds, and, once they are read, the counts of the ID ranges of
// the records stored now, which a rerun where nothing changed stores none of. An interrupted
// pass resumes from its own stored place: nothing is predicted.
func (s *IDScan) Prefetch(ctx context.Context, env Env, ent *Entity, ahead *Ahead) ([]rest.Command, error) {
	e := env.e
	inv, err := e.store().peekInventory(ctx, s.scope(ent))
	if err != nil {
		return nil, err
	}
	if inv.Pass > 0 && !inv.Complete { // resumed where it stopped
		return nil, nil
	}
	ps, err := s.prepared(ctx, e, ent)
	if err != nil {
		return nil, err
	}
	bounds, err := ps.Scan.BoundsCommands("0")
	if err != nil {
		return nil, err
	}
	if ahead.Round == 1 {
		return bounds, nil
	}
	first, ok := ahead.Answer(bounds[0])
	if !ok {
		return nil, nil
	}
	zone, err := e.zoneOf(first)
	if err != nil {
		return nil, err
	}
	fingerprint, err := ps.fingerprint()
	if err != nil {
		return nil, err
	}
	d := e.decidePass(passInput{Inv: inv, Fingerprint: fingerprint, PortalNow: portalClock(first.Time),
		AnsweredAt: ahead.arrived(first.Time), NoDelta: ps.NoDelta()})
	if !d.Delta() {
		return nil, nil
	}
	var out []rest.Command
	for _, field := range ps.Modified {
		cmds, err := ps.filtered(ent, field, d.Since, zone).Scan.BoundsCommands("0")
		if err != nil {
			return nil, err
		}
		out = append(out, cmds...)
	}
	if e.testLimit > 0 { // relistChanged counts nothing then
		return out, nil
	}
	cut, _, err := e.store().liveIDChunks(ctx, ent.Name, ps.IDPrefix, deltaRangeRows)
	if err != nil {
		return nil, err
	}
	for _, c := range cut {
		p, err := ps.Scan.CountRange(c.lo, c.hi, ps.CountParams)
		if err != nil {
			return nil, fmt.Errorf("count %s: %w", ent.Name, err)
		}
		out = append(out, rest.Command{Method: ps.Scan.Method, Params: p})
	}
	return out, nil
}
