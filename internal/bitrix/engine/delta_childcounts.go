package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// A child deleted alone on the portal (a task comment) may move no date of its parent: no
// modification filter of a delta pass returns the parent, so its children are not read again and
// the deletion is missed. What does move is the parent's count of them (ChildFetch.CountField).
// After its filtered scans, a delta pass of an IDScan entity with such a child lists every parent
// with only its id and its counts (ID-chained, start=-1, 50 pages of 50 in one batch request, as
// the full scan chains them) and compares each count with the one in the parent's stored payload.
// The parents whose count moved are read again in full by ID and stored as a page whose children
// are all read again, each parent concluding its children's deletions (childrenOfEvery).
//
// The comparison is with the stored payload's own value, not with the children stored: what the
// portal counts (a forum topic's posts, system messages or not) need not be what the child
// method returns. A parent a filtered scan read is stored with the count the portal showed then,
// so it is not read twice unless its count moved again since. Parents listed but not stored, or
// stored but not listed, are left to the filtered scans and the ID-range counts (new and deleted
// records).
//
// The listing keeps no place of its own: a delta pass killed during it lists every parent again
// when resumed, one request per 2,500 parents. Nothing is read twice for that: each request's
// moved parents are stored, with their new counts, before the next request, so a second listing
// finds only what moved since.

// childCountBatch is how many parents whose count moved are read again and stored at once.
const childCountBatch = 500

// countedChildren returns the ChildFetch children of ent that declare a count field.
func countedChildren(reg *Registry, ent *Entity) []*Entity {
	var out []*Entity
	for _, c := range reg.Children(ent) {
		if c.Fetch != nil && c.Fetch.CountField != "" {
			out = append(out, c)
		}
	}
	return out
}

// countSelects names what a listing of ent selects to return its children's counts.
func countSelects(reg *Registry, ent *Entity) []string {
	var out []string
	for _, c := range countedChildren(reg, ent) {
		if c.Fetch.CountSelect != "" {
			out = append(out, c.Fetch.CountSelect)
		}
	}
	return out
}

// countScan is the narrow listing of every parent: the scan's method and filter, its id and the
// counts selected, nothing else.
func (s *IDScan) countScan(counted []*Entity) rest.Scan {
	c := s.Scan
	c.Params = maps.Clone(s.Scan.Params)
	if c.Params == nil {
		c.Params = map[string]any{}
	}
	sel := []string{s.Scan.IDFilterField()}
	for _, ch := range counted {
		sel = append(sel, ch.Fetch.CountSelect)
	}
	c.Params["select"] = sel
	return c
}

// childCounts lists every parent's children counts after a delta pass's filtered scans and reads
// again, with all their children, the parents whose count moved since they were stored.
func (s *IDScan) childCounts(ctx context.Context, w *rangeWalk) error {
	e, ent := w.g.Env.e, w.g.Ent
	counted := countedChildren(e.registry, ent)
	if len(counted) == 0 {
		return nil
	}
	if s.IDPrefix != "" {
		// byIDs reads records whose portal id is the row's own; no scan with a prefix has a
		// counted child.
		return fmt.Errorf("%s: children's counts of a scan with an id prefix are not supported", ent.Name)
	}
	scan := s.countScan(counted)
	var listed, moved, requests, uncounted int
	for after, done := "0", false; !done; {
		pages, err := e.source.ScanSegments(ctx, scan, []rest.Segment{{After: after, Pages: countPages(w.total, listed)}})
		if err != nil {
			return fmt.Errorf("%s: list the children's counts after %s: %w", ent.Name, after, err)
		}
		requests++
		listing := map[string]map[string]json.RawMessage{}
		var order []string
		for _, p := range pages[0] {
			for _, row := range p.Rows {
				fields, err := FieldsOf(row)
				if err != nil {
					return fmt.Errorf("%s: children's counts: %w", ent.Name, err)
				}
				id := Text(fields, ent.idField())
				listing[id] = fields
				order = append(order, id)
			}
			after, done = p.Next, p.Last
		}
		listed += len(order)
		ids, n, err := e.store().movedCounts(ctx, ent.Name, counted, order, listing)
		if err != nil {
			return err
		}
		uncounted += n
		moved += len(ids)
		for len(ids) > 0 {
			chunk := ids[:min(len(ids), childCountBatch)]
			ids = ids[len(chunk):]
			if err := s.rereadCounted(ctx, w, chunk); err != nil {
				return err
			}
		}
	}
	if uncounted > 0 {
		e.log.Warn("the listing left children's counts out: those parents' children deleted alone are not found",
			"entity", ent.Name, "parents", uncounted)
	}
	e.log.Info("children's counts compared", "entity", ent.Name, "parents", listed, "moved", moved, "requests", requests)
	return nil
}

// countPages is how many pages the next request of the count listing chains: a full batch, or,
// when the whole listing's total is known, what is left of it and one short page to see it end
// (a longer listing goes on in the next request).
func countPages(total *int64, listed int) int {
	if total == nil {
		return rest.MaxBatch
	}
	left := max(*total-int64(listed), 0)
	return int(min(left/rest.PageSize+1, rest.MaxBatch))
}

// rereadCounted reads the parents again by id and stores them as a page whose children are all
// read again, each parent concluding its children's deletions.
func (s *IDScan) rereadCounted(ctx context.Context, w *rangeWalk, ids []string) error {
	e, ent, g := w.g.Env.e, w.g.Ent, w.g
	recs, err := s.byIDs(ctx, e, ent, ids, w.zone)
	if err != nil {
		return err
	}
	kids, reread, err := e.fetchChildren(ctx, ent, recs, true, w.zone)
	if err != nil {
		return err
	}
	counted := countedChildren(e.registry, ent)
	saved, err := e.savePage(ctx, e.store(), Page{Records: append([]EntityRecords{{ent, recs}}, kids...), reread: reread,
		Reason: "changed on the source: a count of its children moved",
		then:   func(ctx context.Context, tx Store) error { return tx.refreshCounts(ctx, ent.Name, counted, recs) }})
	if err != nil {
		return err
	}
	saved.AddCounts(g.Stats)
	return nil
}

// movedCounts returns, in the listing's order, the parents of entity stored live whose count of
// one of the counted children (for which that child's fetch is made, ChildFetch.When on the
// stored payload) differs from the listing's, and how many listed parents the listing gave no
// count for. A stored payload without the count (stored before it was selected) differs.
func (s Store) movedCounts(ctx context.Context, entity string, counted []*Entity, order []string,
	listing map[string]map[string]json.RawMessage) ([]string, int, error) {
	if len(order) == 0 {
		return nil, 0, nil
	}
	rows, err := s.db.Query(ctx, `SELECT source_id, payload FROM bitrix_records
WHERE entity = $1 AND source_id = ANY($2) AND `+live(""), entity, order)
	if err != nil {
		return nil, 0, fmt.Errorf("compare %s's children's counts with what is stored: %w", entity, err)
	}
	stored := map[string]json.RawMessage{}
	var sid string
	var payload json.RawMessage
	if _, err := pgx.ForEachRow(rows, []any{&sid, &payload}, func() error {
		stored[sid] = append(json.RawMessage(nil), payload...)
		return nil
	}); err != nil {
		return nil, 0, fmt.Errorf("compare %s's children's counts with what is stored: %w", entity, err)
	}
	var moved []string
	uncounted := 0
	for _, id := range order {
		p, ok := stored[id]
		if !ok {
			continue // new: a filtered scan or the range counts read it
		}
		fields, err := FieldsOf(p)
		if err != nil {
			return nil, 0, fmt.Errorf("%s %s: %w", entity, id, err)
		}
		for _, c := range counted {
			if c.Fetch.When != nil && !c.Fetch.When(fields) {
				continue
			}
			if _, ok := listing[id][c.Fetch.CountField]; !ok {
				uncounted++
				break
			}
			if _, had := fields[c.Fetch.CountField]; !had || Text(fields, c.Fetch.CountField) != Text(listing[id], c.Fetch.CountField) {
				moved = append(moved, id)
				break
			}
		}
	}
	return moved, uncounted, nil
}

// refreshCounts writes the children's counts of the records read into their stored payloads. A
// count is Volatile, out of the checksum, so a record whose count alone moved is stored unchanged,
// keeping its old payload (saveRecords): without this, every later delta would find its count
// moved and read it again.
func (s Store) refreshCounts(ctx context.Context, entity string, counted []*Entity, recs []Incoming) error {
	for _, c := range counted {
		var ids, vals []string
		for _, r := range recs {
			fields, err := FieldsOf(r.payload)
			if err != nil {
				return fmt.Errorf("%s %s: %w", entity, r.sourceID, err)
			}
			if v, ok := fields[c.Fetch.CountField]; ok {
				ids, vals = append(ids, r.sourceID), append(vals, string(v))
			}
		}
		if len(ids) == 0 {
			continue
		}
		_, err := s.db.Exec(ctx, `UPDATE bitrix_records r SET payload = jsonb_set(r.payload, ARRAY[$2::text], v.val::jsonb)
FROM unnest($3::text[], $4::text[]) AS v(sid, val) WHERE r.entity = $1 AND r.source_id = v.sid`, entity, c.Fetch.CountField, ids, vals)
		if err != nil {
			return fmt.Errorf("store the %s counts of %s: %w", c.Name, entity, err)
		}
	}
	return nil
}
