package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
)

// A delta pass lists again only the ID ranges whose counts differ (delta_ranges.go): a record
// it did not see elsewhere was simply not modified, and only in a range listed again does "not
// seen" mean "deleted". A full pass concludes as it always did.

// ScanLister is a Lister that reads an entity with several ID scans, one per type of its records
// (the items of each smart process type): each scan keeps its own pass, full or delta, under its
// Scope, and its records' portal ids start with its IDPrefix. Deletions are concluded scan by
// scan, by the kind of each one's pass.
type ScanLister interface {
	Lister
	Scans(ctx context.Context, env Env, ent *Entity) ([]*IDScan, error)
}

// scansOf returns the ID scans that read ent: its IDScan, a ScanLister's scans, or none.
func (e *Engine) scansOf(ctx context.Context, ent *Entity) ([]*IDScan, error) {
	switch l := ent.Lister.(type) {
	case *IDScan:
		return []*IDScan{l}, nil
	case ScanLister:
		return l.Scans(ctx, e.env(), ent)
	}
	return nil, nil
}

// passUnseen are the records a get's conclusion weighs: those its pass could have seen and did not.
type passUnseen struct {
	gone []goneRecord
	live int64
	// delta is set when a scan of the entity ran a delta pass.
	delta bool
	// proven are records of ranges the delta pass listed again and saw as many records in as the
	// portal counted: no page of them was missed, so they are gone without asking the portal.
	proven map[int64]bool
}

// unseenOfPass returns the records the entity's last get did not see and that its pass could
// have: every record not seen since a full pass started; of a scan whose pass was delta, only
// those in the ranges it listed again (none while that pass is not complete).
func (e *Engine) unseenOfPass(ctx context.Context, ent *Entity, inv Inventory) (passUnseen, error) {
	s := e.store()
	scans, err := e.scansOf(ctx, ent)
	if err != nil {
		return passUnseen{}, err
	}
	type deltaScan struct {
		scan *IDScan
		inv  Inventory
	}
	var deltas []deltaScan
	for _, sc := range scans {
		sinv, ok, err := s.scanInventory(ctx, sc.scope(ent))
		if err != nil {
			return passUnseen{}, err
		}
		if ok && sinv.Kind == PassDelta && sinv.Pass > 0 {
			deltas = append(deltas, deltaScan{sc, sinv})
		}
	}
	if len(deltas) == 0 {
		gone, live, err := s.unseen(ctx, ent.Name, *inv.StartedAt)
		return passUnseen{gone: gone, live: live}, err
	}
	u := passUnseen{delta: true, proven: map[int64]bool{}}
	prefixes := make([]string, len(deltas))
	for i, d := range deltas {
		prefixes[i] = d.scan.IDPrefix
	}
	if u.gone, err = s.unseenOutside(ctx, ent.Name, *inv.StartedAt, prefixes); err != nil {
		return u, err
	}
	if u.live, err = s.liveCount(ctx, ent.Name); err != nil {
		return u, err
	}
	for _, d := range deltas {
		scope := d.scan.scope(ent)
		if !d.inv.Complete || d.inv.StartedAt == nil {
			e.log.Debug("no deletions concluded in a delta pass not complete", "entity", ent.Name, "scope", scope)
			continue
		}
		ranges, err := s.relistedRanges(ctx, scope, d.inv.Pass)
		if err != nil || len(ranges) == 0 {
			if err != nil {
				return u, err
			}
			continue
		}
		recs, err := s.recordsInRanges(ctx, ent.Name, d.scan.IDPrefix, *d.inv.StartedAt, ranges)
		if err != nil {
			return u, err
		}
		relisted := make([]int64, len(ranges))
		for _, r := range recs {
			if r.relisted {
				relisted[r.rng]++
			}
		}
		for _, r := range recs {
			if r.seen {
				continue
			}
			u.gone = append(u.gone, r.goneRecord)
			// A range's rows only shrink after its count (new records get higher ids), so a
			// listing again that saw as many as the count missed none of them.
			if relisted[r.rng] >= ranges[r.rng].portal {
				u.proven[r.id] = true
			}
		}
	}
	slices.SortFunc(u.gone, func(a, b goneRecord) int { return cmp.Compare(a.id, b.id) })
	return u, nil
}

// unproven returns those of gone that the counts did not prove gone.
func (u passUnseen) unproven(gone []goneRecord) []goneRecord {
	return slices.DeleteFunc(slices.Clone(gone), func(g goneRecord) bool { return u.proven[g.id] })
}

// sample is sampleGone for the records the counts did not prove gone: most are gone when the
// proven ones are most, or the sample of the others says so.
func (u passUnseen) sample(ctx context.Context, e *Engine, ent *Entity, gone []goneRecord) (bool, error) {
	rest := u.unproven(gone)
	if (len(gone)-len(rest))*2 > len(gone) {
		return true, nil
	}
	return e.sampleGone(ctx, ent, rest)
}

// confirm is confirmGone for the records the counts did not prove gone; the proven ones are kept.
func (u passUnseen) confirm(ctx context.Context, e *Engine, ent *Entity, gone []goneRecord) ([]goneRecord, error) {
	rest := u.unproven(gone)
	if len(rest) == 0 {
		return gone, nil
	}
	confirmed, err := e.confirmGone(ctx, ent, rest)
	if err != nil {
		return nil, err
	}
	keep := map[int64]bool{}
	for _, g := range confirmed {
		keep[g.id] = true
	}
	return slices.DeleteFunc(slices.Clone(gone), func(g goneRecord) bool { return !u.proven[g.id] && !keep[g.id] }), nil
}

// reason is the status history's reason for a record the pass concluded deleted.
func (u passUnseen) reason(pass int) string {
	if u.delta {
		return fmt.Sprintf("deleted on the portal: get pass %d (delta) counted fewer records in its ID range, listed the range again and no longer saw it", pass)
	}
	return fmt.Sprintf("deleted on the portal: get pass %d read the whole portal and no longer saw it", pass)
}

// unexplainedIn reports whether a pass's reason says its counts found what it could not explain.
func unexplainedIn(reason *string) bool {
	return reason != nil && strings.Contains(*reason, unexplainedCounts)
}
