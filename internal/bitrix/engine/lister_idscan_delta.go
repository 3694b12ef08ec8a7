package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// A delta pass of an IDScan (pass.go) reads, for each field of IDScan.Modified, the records
// whose field is after the pass's since: one filtered scan per field, walked as a full pass is
// (ID-chained, start=-1, the filtered listing's bounds cut into ID ranges read at once), its rows
// stored through the same path (children fetched with each page, records counted new, changed
// or unchanged). Each filtered scan keeps its ranges in bitrix_get_ranges and its pages in
// bitrix_page_log under a scope of its own (deltaScope), numbered with the entity's pass, and
// moves the entity's inventory (its rows, not its completion) in the transaction that stores
// each page: a delta pass killed anywhere resumes every filtered scan where it stopped. Once
// every filtered scan is read, afterDelta runs, then the pass is marked complete.

// deltaScope is the name the filtered scan of one modification field keeps its ID ranges and
// page log under: the scan's scope and the filter, "items>updatedTime".
func deltaScope(scope, field string) string { return scope + ">" + field }

// deltaWalk is what the filtered scans of one delta pass share.
type deltaWalk struct {
	// inventory is the scope whose inventory row the pass's pages move.
	inventory string
	mu        sync.Mutex
	// seen holds the records stored by this get's earlier filtered scans: a record modified in
	// two fields is read by both, and stored (and its children fetched) once.
	seen map[string]bool
}

// fresh drops the rows whose records an earlier filtered scan of this get stored.
func (d *deltaWalk) fresh(ent *Entity, prefix string, rows []json.RawMessage) ([]json.RawMessage, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.seen) == 0 {
		return rows, nil
	}
	out := rows[:0:0]
	for _, row := range rows {
		fields, err := FieldsOf(row)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ent.Name, err)
		}
		if !d.seen[prefix+Text(fields, ent.idField())] {
			out = append(out, row)
		}
	}
	return out, nil
}

// stored notes records stored by a filtered scan.
func (d *deltaWalk) stored(recs []Incoming) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range recs {
		d.seen[r.sourceID] = true
	}
}

// filtered is the scan of the records whose field is after since: the scan's filter with
// ">field" added, in the form the portal documents for datetimes (data-types.md:
// YYYY-MM-DDThh:mm:ss±hh:mm, with the portal's offset; DeltaSince, never RFC 3339's "Z", which
// a portal in UTC would otherwise be sent), under the field's own scope.
func (s *IDScan) filtered(ent *Entity, field string, since time.Time, zone *time.Location) *IDScan {
	c := *s
	c.Scope = deltaScope(s.scope(ent), field)
	c.Scan.Params = maps.Clone(s.Scan.Params)
	if c.Scan.Params == nil {
		c.Scan.Params = map[string]any{}
	}
	param := cmp.Or(s.Scan.FilterParam, "filter")
	filter := map[string]any{}
	if f, ok := s.Scan.Params[param].(map[string]any); ok {
		maps.Copy(filter, f)
	}
	if zone == nil {
		zone = time.UTC
	}
	filter[">"+field] = DeltaSince(since.In(zone))
	c.Scan.Params[param] = filter
	return &c
}

// delta runs a delta pass (new or resumed): each modification field's filtered scan, then
// afterDelta, then the pass's end.
func (s *IDScan) delta(ctx context.Context, w *rangeWalk) error {
	e, ent, g := w.g.Env.e, w.g.Ent, w.g
	scope := s.scope(ent)
	d := &deltaWalk{inventory: scope, seen: map[string]bool{}}
	size, err := e.store().storedRowSize(ctx, ent.Name)
	if err != nil {
		return err
	}
	for _, field := range s.Modified {
		f := s.filtered(ent, field, g.Pass.Since, w.zone)
		fw := &rangeWalk{g: g, scan: f, zone: w.zone, pass: w.pass, size: size, delta: d}
		if err := fw.plan(ctx); err != nil {
			if refused, ok := filterRefused(err); ok {
				// The whole listing answered, its filtered scan did not: the portal does not
				// filter by the field, and only a full pass can be trusted.
				return s.fullAfterAll(ctx, w, fmt.Sprintf("the portal refused the filter >%s (%s): every record is read",
					field, refused.Error()))
			}
			return fmt.Errorf("%s since %s: %w", field, g.Pass.Since.Format(time.RFC3339), err)
		}
		if err := fw.run(ctx); err != nil {
			return fmt.Errorf("%s since %s: %w", field, g.Pass.Since.Format(time.RFC3339), err)
		}
	}
	if err := s.childCounts(ctx, w); err != nil {
		return err
	}
	if err := w.afterDelta(ctx); err != nil {
		return err
	}
	if err := e.store().finishDelta(ctx, scope, w.pass); err != nil {
		return err
	}
	g.Stats.Complete = true
	e.log.Info("delta pass read", "entity", ent.Name, "scope", scope, "pass", w.pass, "fields", s.Modified,
		"records", len(d.seen))
	return nil
}

// filterRefused reports whether a filtered scan's first request failed for its filter: a refusal
// that asking again cannot change, when the same listing without the filter answered. A block of
// the portal (OVERLOAD_LIMIT, a deleted portal) is not one: it stops a full pass as well.
func filterRefused(err error) (*rest.APIError, bool) {
	refused, ok := errors.AsType[*rest.APIError](err)
	if !ok || !rest.IsPermanent(err) || rest.HasCode(err, rest.CodeOverloadLimit) || rest.HasCode(err, rest.CodePortalDeleted) {
		return nil, false
	}
	return refused, true
}

// fullAfterAll turns the delta pass w runs into a full one, for the reason given: the whole
// listing's bounds (those the pass began with, or read again when it was resumed) are cut into
// ranges and walked as a new full pass's would be. The records the delta stored stay; the pass
// concludes deletions, and counts as a full one, once it ends.
func (s *IDScan) fullAfterAll(ctx context.Context, w *rangeWalk, reason string) error {
	e, ent, g := w.g.Env.e, w.g.Ent, w.g
	scope := s.scope(ent)
	b := w.bounds
	if b == nil {
		again, err := e.source.ScanBounds(ctx, s.Scan, "0")
		if err != nil {
			return err
		}
		b = &again
		if again.Total >= len(again.First.Rows) {
			t := int64(again.Total)
			w.total = &t
		}
	}
	fingerprint, err := s.fingerprint()
	if err != nil {
		return err
	}
	g.Pass = PassDecision{Kind: PassFull, Reason: reason}
	w.ranges, w.density = newRanges(*b, e.testLimit)
	err = e.store().Tx(ctx, func(tx Store) error {
		if err := tx.deltaToFull(ctx, scope, w.pass, reason, fingerprint); err != nil {
			return err
		}
		return tx.saveRanges(ctx, scope, w.pass, w.ranges)
	})
	if err != nil {
		return err
	}
	e.log.Warn("delta pass turned full", "entity", ent.Name, "scope", scope, "pass", w.pass, "reason", reason,
		"ranges", len(w.ranges))
	if err := w.store(ctx, w.ranges[:1], [][]rest.Page{{b.First}}); err != nil {
		if errors.Is(err, ErrLimitReached) {
			return nil
		}
		return err
	}
	return w.run(ctx)
}

// plan gives a filtered scan's walk its ranges: those of the pass kept under its scope when it
// was begun before (an interrupted get), else the filtered listing's bounds cut into ranges,
// recorded, and its first page stored.
func (w *rangeWalk) plan(ctx context.Context) error {
	e, scope := w.g.Env.e, w.scan.Scope
	ranges, total, err := e.store().passRanges(ctx, scope, w.pass)
	if err != nil {
		return err
	}
	if len(ranges) > 0 {
		w.ranges, w.total, w.density = ranges, total, densityOf(ranges, total)
		return nil
	}
	b, err := e.source.ScanBounds(ctx, w.scan.Scan, "0")
	if err != nil {
		return err
	}
	w.ranges, w.density = newRanges(b, 0)
	if b.Total >= len(b.First.Rows) {
		t := int64(b.Total)
		w.total = &t
	}
	if err := e.store().saveRanges(ctx, scope, w.pass, w.ranges); err != nil {
		return err
	}
	e.log.Info("delta scan started", "entity", w.g.Ent.Name, "scope", scope, "pass", w.pass, "total", b.Total,
		"last_id", b.Last, "ranges", len(w.ranges))
	return w.store(ctx, w.ranges[:1], [][]rest.Page{{b.First}})
}

// afterDelta runs once every filtered scan of a delta pass is read, before the pass is marked
// complete: the ID-range counts find what a delta pass cannot see by modification time (records
// deleted), and the ranges whose counts differ are listed again (delta_ranges.go).
func (w *rangeWalk) afterDelta(ctx context.Context) error { return w.scan.relistChanged(ctx, w) }

// log is the writes that go with a filtered scan's page, in its transaction: the ranges' places
// under the scan's scope, its page log rows, and the pass's rows on the entity's inventory.
func (d *deltaWalk) log(r *rangeLog, runID int64) func(ctx context.Context, tx Store) error {
	return func(ctx context.Context, tx Store) error {
		for _, s := range r.steps {
			if err := tx.advanceRange(ctx, r.scope, r.pass, s.lo, s.cursor, s.done); err != nil {
				return err
			}
		}
		return tx.logDeltaPages(ctx, d.inventory, r.scope, runID, r.pass, r.pages, r.total)
	}
}
