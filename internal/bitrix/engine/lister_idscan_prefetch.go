package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// Prefetch makes IDScan a Prefetcher (prefetch.go). A new pass begins with the listing's bounds
// (round 1). Round 2 decides the pass as begin will, by the bounds' answer (the portal's clock,
// compared with this machine's when that answer arrived): a delta pass then sends each
// modification field's filtered bounds, and, once they are read, the counts of the ID ranges of
// the records stored now, which a rerun where nothing changed stores none of. An interrupted
// pass resumes from its own stored place: nothing is predicted. A full pass stores the bounds'
// first page first, with its records' children (ChildFetch): round 2 asks those too; a delta
// pass reads the children of every record its filtered scans return: round 3 asks those of
// their first pages (a record two filtered scans return is read once: a command too many).
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
		if ahead.Round == 3 {
			return nil, nil
		}
		kids, err := ps.firstChildren(e, ent, first, zone)
		ahead.Anytime(kids...)
		return nil, err
	}
	var out []rest.Command
	for _, field := range ps.Modified {
		cmds, err := ps.filtered(ent, field, d.Since, zone).Scan.BoundsCommands("0")
		if err != nil {
			return nil, err
		}
		if ahead.Round == 3 { // the children of the records the filtered scan's first page returns
			if filtered, ok := ahead.Answer(cmds[0]); ok {
				kids, err := ps.firstChildren(e, ent, filtered, zone)
				if err != nil {
					return nil, err
				}
				ahead.Anytime(kids...)
			}
			continue
		}
		out = append(out, cmds...)
	}
	if ahead.Round == 3 {
		return out, nil
	}
	if err := ps.prefetchChildCounts(ctx, e, ent, ahead); err != nil {
		return nil, err
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
		ahead.Anytime(rest.Command{Method: ps.Scan.Method, Params: p})
	}
	return out, nil
}

// firstChildren returns the commands that read the ChildFetch children of the rows of a full
// pass's first page (the bounds' answer), as the page's store will send them.
func (s *IDScan) firstChildren(e *Engine, ent *Entity, first *rest.Response, zone *time.Location) ([]rest.Command, error) {
	var fetched []*Entity
	for _, c := range e.registry.Children(ent) {
		if c.Fetch != nil {
			fetched = append(fetched, c)
		}
	}
	if len(fetched) == 0 {
		return nil, nil
	}
	rows, err := first.Rows(s.Scan.RowsPath...)
	if err != nil {
		return nil, err
	}
	parents, _, err := decodeRowsAs(ent, s.IDPrefix, s.Fill, rows, zone)
	if err != nil {
		return nil, err
	}
	var out []rest.Command
	for _, c := range fetched {
		cmds, err := c.Fetch.commands(parents)
		if err != nil {
			return nil, err
		}
		out = append(out, cmds...)
	}
	return out, nil
}

// prefetchChildCounts hands the prefetch, for a delta pass of a scan with counted children
// (delta_childcounts.go), the first request of its listing of every parent's counts: a chain
// sized by the bounds' count as childCounts sizes it.
func (s *IDScan) prefetchChildCounts(ctx context.Context, e *Engine, ent *Entity, ahead *Ahead) error {
	counted := countedChildren(e.registry, ent)
	if len(counted) == 0 || s.IDPrefix != "" {
		return nil
	}
	b, err := rest.ScanBoundsWith(ctx, ahead.batch, s.Scan, "0")
	if err != nil {
		return nil // not asked ahead, or refused: the pass asks
	}
	chain, err := s.countScan(counted).SegmentCommands([]rest.Segment{{After: "0", Pages: countPages(boundsTotal(b), 0)}})
	if err != nil {
		return err
	}
	ahead.Chain(chain)
	return nil
}
