package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// A delta pass reads only what the portal's modification filter returns, and a deleted record
// is not among it. Its deletions are found by counting instead (docs/bitrix-delta.md, "Deletions
// without a full listing"): once the delta's records are stored, the scan's stored live ids are
// cut into ID ranges, the portal counts each (the total of a filtered first page, 50 counts a
// batch request) and a range whose count differs from the stored one is listed again by ID
// through the pass's range walk (its bitrix_get_ranges rows, so a get killed midway resumes
// it). Only there can a record be concluded deleted (unseenOfPass); the rest of the scan's
// records are left as they are.
//
// A range the portal counts more records in than are stored holds an addition the modification
// filter did not return: it is listed again too, and the pass's reason says so, which makes the
// next pass full (decidePass). One deletion and one such addition in the same range cancel out
// in the count: the deletion is found by the next full pass (Config.FullEvery).

// deltaRangeRows is how many stored records a counted range holds. A rerun with nothing changed
// costs one count per range, 50 counts a batch request: one request per 2,450 × 50 (about
// 122,500) records, 9 for a million records. A range that differs is listed again, and at this
// size its rows (fewer after a deletion, up to 49 more after unexplained additions) are 50
// chained pages at most: one batch request, the least any listing of it costs. Smaller ranges
// would cost more counts on every rerun for no cheaper re-listing; larger ones would take two
// requests or more to list again each range a single deletion touched.
const deltaRangeRows = rangeRows

// countMark starts the page log cursor of a counted range that differed, followed by its lower
// bound (its next_cursor is its upper bound, its total the portal's count, its count the stored
// one): the log of what a delta pass listed again, which is what its deletions are concluded in,
// and the sign that its counts were taken (a resumed pass does not count again).
const countMark = "count "

// unexplainedCounts is in the reason of a delta pass that found records the modification filter
// did not return (or a range it could not count): the incremental reasoning cannot be trusted,
// and the next pass is full.
const unexplainedCounts = "counted records the modification filter did not return"

// countedRange is one range of a delta pass's counts: the IDs after lo up to and including hi,
// the live records stored in it and the portal's count of it.
type countedRange struct {
	lo, hi         string
	stored, portal int64
	// known is set when the portal's count is one: a total its own page does not contradict.
	known bool
}

// differs reports whether the range must be listed again.
func (c countedRange) differs() bool { return !c.known || c.portal != c.stored }

// unexplained reports whether the range holds records the delta pass did not read.
func (c countedRange) unexplained() bool { return !c.known || c.portal > c.stored }

// relistChanged ends a delta pass of the scan: it counts the ranges of its stored records (unless
// the pass counted them before it was interrupted) and lists again by ID those whose counts
// differ. w is the pass's walk, for its zone and row size.
func (s *IDScan) relistChanged(ctx context.Context, w *rangeWalk) error {
	e, ent := w.g.Env.e, w.g.Ent
	scope := s.scope(ent)
	if e.testLimit > 0 { // a limited pass concludes no deletion: nothing to localize
		return nil
	}
	inv, err := e.store().loadInventory(ctx, scope)
	if err != nil {
		return err
	}
	planned, err := e.store().relistedRanges(ctx, scope, inv.Pass)
	if err != nil {
		return err
	}
	if len(planned) == 0 {
		if err := s.countRanges(ctx, e, ent, inv); err != nil {
			return err
		}
		if planned, err = e.store().relistedRanges(ctx, scope, inv.Pass); err != nil {
			return err
		}
		if inv, err = e.store().loadInventory(ctx, scope); err != nil { // the portal's total, counted
			return err
		}
	}
	// A range listed again re-reads the children only of its new and changed records: the
	// unchanged ones' children were read with them, and the filtered scans re-read those of
	// every record the portal says was modified (children_delta.go).
	rw := &rangeWalk{g: w.g, scan: s, zone: w.zone, pass: inv.Pass, before: inv.PassRows, total: inv.SourceTotal, size: w.size,
		children: childrenOfChanged}
	var rows, span float64
	for _, r := range planned {
		if r.done {
			continue
		}
		rw.ranges = append(rw.ranges, r.idRange)
		rows += float64(r.portal)
		span += span64(r.lo, r.hi)
	}
	if len(rw.ranges) == 0 {
		return nil
	}
	if span > 0 {
		rw.density = rows / span
	}
	e.log.Info("listing again the ID ranges whose counts differ", "entity", ent.Name, "scope", scope, "pass", inv.Pass,
		"ranges", len(rw.ranges), "of_relisted", len(planned))
	return rw.run(ctx)
}

// span64 is hi - lo of numeric bounds, 0 otherwise.
func span64(lo, hi string) float64 {
	l, errL := strconv.ParseInt(lo, 10, 64)
	h, errH := strconv.ParseInt(hi, 10, 64)
	if errL != nil || errH != nil || h <= l {
		return 0
	}
	return float64(h - l)
}

// countRanges cuts the scan's stored live records into ranges, asks the portal the count of
// each and records, in one transaction, the ranges that differ as ranges of the pass to list
// again (with their page log rows), or the pass's end when none does.
func (s *IDScan) countRanges(ctx context.Context, e *Engine, ent *Entity, inv Inventory) error {
	scope := s.scope(ent)
	cut, odd, err := e.store().liveIDChunks(ctx, ent.Name, s.IDPrefix, deltaRangeRows)
	if err != nil {
		return err
	}
	var notes []string
	if odd > 0 {
		// Ranges of ids that are not numbers cannot be cut: those records are left to the next
		// pass, full.
		notes = append(notes, fmt.Sprintf("%d stored ids are not numbers and were not counted", odd))
	}
	if err := s.askCounts(ctx, e, ent, cut); err != nil {
		return err
	}
	var differ []countedRange
	var total int64
	known, unexplained := true, 0
	for _, c := range cut {
		total += c.portal
		known = known && c.known
		if c.differs() {
			differ = append(differ, c)
		}
		if c.unexplained() {
			unexplained++
		}
	}
	if differ, err = s.refine(ctx, e, ent, differ); err != nil {
		return err
	}
	if unexplained > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d ID ranges", unexplained, len(cut)))
		e.log.Warn("the portal counts records in ID ranges that the delta pass did not read: listed again, and the next pass is full",
			"entity", ent.Name, "scope", scope, "ranges", unexplained)
	}
	var totalp *int64
	if known && odd == 0 {
		totalp = &total
	}
	note := ""
	if len(notes) > 0 {
		note = fmt.Sprintf("%s (%s)", unexplainedCounts, strings.Join(notes, "; "))
	}
	e.log.Info("ID ranges counted", "entity", ent.Name, "scope", scope, "pass", inv.Pass, "ranges", len(cut), "differ", len(differ))
	err = pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		return NewStore(tx).planRelisting(ctx, scope, inv.Pass, e.runID, differ, totalp, note)
	})
	if err == nil && totalp != nil {
		e.counted.Store(scope, runCount{pass: inv.Pass, n: total})
	}
	return err
}

// refine cuts each range whose count differs into ranges of a page of stored records and counts
// those too, keeping only the ones that differ, for a scan that reads something per record of a
// page (Complete: a record's links listed apart, one command a record): a deletion then lists again one
// page and reads its records' links, one batch of counts more, instead of 2,450 records and 49
// calls of their links. A scan without it lists a range again in one request however large, so
// its ranges are kept whole. A range the portal's count did not answer for is kept whole.
func (s *IDScan) refine(ctx context.Context, e *Engine, ent *Entity, differ []countedRange) ([]countedRange, error) {
	if s.Complete == nil || len(differ) == 0 {
		return differ, nil
	}
	var fine, out []countedRange
	for _, c := range differ {
		if !c.known || c.stored <= rest.PageSize {
			out = append(out, c)
			continue
		}
		sub, err := e.store().liveIDChunksIn(ctx, ent.Name, s.IDPrefix, rest.PageSize, c)
		if err != nil {
			return nil, err
		}
		if len(sub) == 0 {
			out = append(out, c)
			continue
		}
		sub[len(sub)-1].hi = c.hi // the portal may hold ids above the last stored one
		fine = append(fine, sub...)
	}
	if err := s.askCounts(ctx, e, ent, fine); err != nil {
		return nil, err
	}
	for _, c := range fine {
		if c.differs() {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b countedRange) int { return rest.CompareIDs(a.lo, b.lo) })
	e.log.Info("ID ranges whose counts differ counted again a page at a time", "entity", ent.Name,
		"ranges", len(differ), "pages", len(fine), "differ", len(out))
	return out, nil
}

// askCounts asks the portal the count of every range (its filtered first page, reading only what
// CountParams select), 50 a batch request.
func (s *IDScan) askCounts(ctx context.Context, e *Engine, ent *Entity, cut []countedRange) error {
	cmds := make([]rest.Command, len(cut))
	for i, c := range cut {
		p, err := s.Scan.CountRange(c.lo, c.hi, s.CountParams)
		if err != nil {
			return fmt.Errorf("count %s: %w", ent.Name, err)
		}
		cmds[i] = rest.Command{Key: "c" + strconv.Itoa(i), Method: s.Scan.Method, Params: p}
	}
	idField := ent.idField()
	return e.batchEachConcurrently(ctx, cmds, func(key string, r *rest.Response) error {
		i, _ := strconv.Atoi(key[1:])
		c := &cut[i]
		rows, err := r.Rows(s.Scan.RowsPath...)
		if err != nil {
			return fmt.Errorf("count %s after %s up to %s: %w", ent.Name, c.lo, c.hi, err)
		}
		// A row outside the range means the method ignored the range's filter: its total
		// counts something else, and taking it for the range's would conclude deletions.
		for _, row := range rows {
			id, err := rowIDOf(row, idField)
			if err != nil {
				return fmt.Errorf("count %s after %s up to %s: %w", ent.Name, c.lo, c.hi, err)
			}
			if rest.CompareIDs(id, c.lo) <= 0 || rest.CompareIDs(id, c.hi) > 0 {
				return fmt.Errorf("count %s after %s up to %s: %s answered %s: %w", ent.Name, c.lo, c.hi, s.Scan.Method, id, ErrFilterIgnored)
			}
		}
		t, grand := r.GrandTotal(len(rows))
		c.portal, c.known = int64(max(t, len(rows))), grand
		return nil
	}, func(key string, err error) error {
		i, _ := strconv.Atoi(key[1:])
		return fmt.Errorf("count %s after %s up to %s: %w", ent.Name, cut[i].lo, cut[i].hi, err)
	})
}

// rowIDOf is a row's id field as text.
func rowIDOf(row json.RawMessage, idField string) (string, error) {
	fields, err := FieldsOf(row)
	if err != nil {
		return "", err
	}
	id := Text(fields, idField)
	if id == "" {
		return "", fmt.Errorf("row without %s: %.200s", idField, row)
	}
	return id, nil
}
