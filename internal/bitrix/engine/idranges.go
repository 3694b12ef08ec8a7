package engine

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// An IDScan pass is walked as many ID ranges at once (rest.ScanSegments): the IDs between the
// first page and the highest ID are cut into ranges of about one batch of rows each, and every
// request carries the next pages of as many ranges as fit in its 50 commands, so a request is
// full however the ranges end, and Concurrency requests are in flight while earlier answers are
// stored. Each range's place is in bitrix_get_ranges, moved in the transaction that stores its
// rows, so an interrupted get resumes every range where it stopped.

// rangeRows is how many rows a planned range should hold: 49 full pages, so that with the one
// short page that ends it the range fits one batch.
const rangeRows = (rest.MaxBatch - 1) * rest.PageSize

// idRange is one range of a pass: the IDs after lo up to and including hi ("" for no end), read
// up to cursor.
type idRange struct {
	lo, hi, cursor string
	done           bool
	busy           bool // its next pages are on the way or being stored
	// density, when set, is the range's own rows per unit of ID (a range whose count is known:
	// delta_ranges.go), in place of the walk's.
	density float64
}

// rangeWalk is one get's walk over the open ranges of a pass.
type rangeWalk struct {
	g    *GetRun
	scan *IDScan
	zone *time.Location
	pass int
	// density is the estimated rows per unit of ID, for sizing requests and splitting ranges;
	// 0 when IDs are not numbers (one range, read page by page).
	density float64
	// before counts the pass's rows stored before this get; total is the pass's row count as
	// the portal reported it, if it did.
	before int64
	total  *int64

	// children says which rows' ChildFetch children are read with them (children_delta.go);
	// the zero value follows the pass.
	children childReads

	mu     sync.Mutex // ranges are taken and released by the pool, moved by the jobs
	ranges []*idRange // ordered by lo
	stored int64      // rows stored by this get (clipped to test_limit)
	limit  bool       // test_limit reached
	// size is the rows' mean size so far, held what the requests in flight hold until stored
	// (memory.go).
	size     rowSize
	held     float64
	heldBack bool // logged once

	// delta is set on the walk of a delta pass's filtered scan (lister_idscan_delta.go): its
	// pages move the entity's inventory, not the scan's, and never end the pass.
	delta *deltaWalk
	// bounds is the whole listing's bounds read when a delta pass started (nil when resumed):
	// its total and highest ID, for afterDelta.
	bounds *rest.Bounds
}

// newRanges plans a new pass from the listing's bounds: the IDs after the first page up to the
// last one are cut into ranges of about rangeRows rows (the first range starting at the
// beginning, so that it holds the first page), and one open range after the last ID catches
// records created during the pass. Under test_limit, or when IDs are not numbers, the pass is
// one open range read in order (density 0).
func newRanges(b rest.Bounds, testLimit int) (ranges []*idRange, density float64) {
	lo, errLo := strconv.ParseInt(b.First.Next, 10, 64)
	hi, errHi := strconv.ParseInt(b.Last, 10, 64)
	left := b.Total - len(b.First.Rows)
	if testLimit > 0 || b.First.Last || errLo != nil || errHi != nil || hi <= lo || left <= 0 {
		return []*idRange{{lo: "0", hi: "", cursor: "0"}}, 0
	}
	density = float64(left) / float64(hi-lo)
	n := max(1, int(math.Ceil(float64(left)/rangeRows)))
	start := "0"
	for i := 1; i <= n; i++ {
		end := strconv.FormatInt(lo+(hi-lo)*int64(i)/int64(n), 10)
		ranges = append(ranges, &idRange{lo: start, hi: end, cursor: start})
		start = end
	}
	ranges = append(ranges, &idRange{lo: start, hi: "", cursor: start})
	return ranges, density
}

// densityOf estimates the rows per unit of ID of a resumed pass from the rows the portal
// reported and the highest planned bound; 0 when the pass is one open range.
func densityOf(ranges []*idRange, total *int64) float64 {
	var top int64
	for _, r := range ranges {
		if h, err := strconv.ParseInt(r.hi, 10, 64); err == nil {
			top = max(top, h)
		}
	}
	if top == 0 || total == nil {
		return 0
	}
	return float64(*total) / float64(top)
}

// estimate returns the rows a range is expected to still hold, -1 when unknown.
func (w *rangeWalk) estimate(r *idRange) float64 {
	c, errC := strconv.ParseInt(r.cursor, 10, 64)
	h, errH := strconv.ParseInt(r.hi, 10, 64)
	density := w.density
	if r.density > 0 {
		density = r.density
	}
	switch {
	case density <= 0 || errC != nil:
		return -1
	case r.hi == "":
		return 0 // past the last ID at the start of the pass: little or nothing
	case errH != nil:
		return -1
	}
	return float64(h-c) * density
}

// pagesFor is how many pages to ask for a range: its expected rows and one short page to see it
// end, or a full batch when unknown; under test_limit no more than the limit leaves.
func (w *rangeWalk) pagesFor(r *idRange) int {
	n := rest.MaxBatch
	if est := w.estimate(r); est >= 0 {
		n = int(math.Ceil(est/rest.PageSize)) + 1
	}
	if lim := w.g.Env.e.testLimit; lim > 0 && w.delta == nil { // a delta pass (resumed) is never limited
		left := int64(lim) - w.before - w.stored
		n = int(min(int64(n), (left+rest.PageSize-1)/rest.PageSize))
	}
	return min(max(n, 1), rest.MaxBatch)
}

// rangeJob is one request: segments of some ranges, and the memory its answer is expected to
// hold until stored.
type rangeJob struct {
	rs   []*idRange
	segs []rest.Segment
	held float64
}

// take picks the next request: segments of free ranges, in ID order, as many as fit in one
// batch, marking them busy. A range expected to hold more than two batches is split first, so idle
// requests find work. It has none while every open range is busy, while the answers in flight
// leave no room in the memory budget for one more, or when the pass is read (or test_limit
// reached).
func (w *rangeWalk) take(ctx context.Context) (rangeJob, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.limit {
		return rangeJob{}, false, nil
	}
	if err := w.split(ctx); err != nil {
		return rangeJob{}, false, err
	}
	var job rangeJob
	budget := rest.MaxBatch
	for _, r := range w.ranges {
		if r.done || r.busy || budget == 0 {
			continue
		}
		// A range whose pages do not fit what is left waits for a request of its own
		// rather than being read in two requests one after the other.
		n := w.pagesFor(r)
		if n > budget && len(job.rs) > 0 {
			continue
		}
		n = min(n, budget)
		budget -= n
		r.busy = true
		job.rs = append(job.rs, r)
		job.segs = append(job.segs, rest.Segment{After: r.cursor, UpTo: r.hi, Pages: n})
	}
	job.held = w.size.held(rest.MaxBatch - budget) // budget: the pages left unasked in the batch
	memory := w.g.Env.e.memoryBudget()
	if len(job.rs) == 0 || !fits(w.held, job.held, memory) {
		for _, r := range job.rs {
			r.busy = false
		}
		if len(job.rs) > 0 && !w.heldBack {
			w.heldBack = true
			w.g.Env.e.log.Info("memory limit holds requests back: the answers in flight would not fit", "entity", w.g.Ent.Name,
				"held_mb", int(w.held)>>20, "budget_mb", int(memory)>>20, "row_bytes", int(w.size.bytes/w.size.rows))
		}
		return rangeJob{}, false, nil
	}
	w.held += job.held
	return job, true, nil
}

// split halves every free range expected to hold more than two batches of rows, recording the
// new range in the same statement's transaction.
func (w *rangeWalk) split(ctx context.Context) error {
	for i := 0; i < len(w.ranges); i++ {
		r := w.ranges[i]
		if r.done || r.busy || w.estimate(r) <= 2*rangeRows {
			continue
		}
		c, _ := strconv.ParseInt(r.cursor, 10, 64)
		h, _ := strconv.ParseInt(r.hi, 10, 64)
		mid := strconv.FormatInt(c+(h-c)/2, 10)
		if err := w.g.Env.e.store().splitRange(ctx, w.scan.scope(w.g.Ent), w.pass, r.lo, mid, r.hi); err != nil {
			return err
		}
		next := &idRange{lo: mid, hi: r.hi, cursor: mid}
		r.hi = mid
		w.ranges = slices.Insert(w.ranges, i+1, next)
		i-- // the first half may still be too large
	}
	return nil
}

// release hands ranges back after their pages were stored (or the request failed).
func (w *rangeWalk) release(job rangeJob) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range job.rs {
		r.busy = false
	}
	w.held -= job.held
}

// oneRound is how many requests a range walk may have in flight while the portal's bucket has
// room: BITRIX_CONCURRENCY's max.
const oneRound = 32

// workers is how many requests the walk keeps in flight: one for a pass read in order; as many
// as there are open ranges, up to oneRound, when they all fit in the standard plan's burst (50,
// less the bounds' request), so that a small portal is read in one or two rounds of
// answers instead of one round per Concurrency ranges; Concurrency otherwise, where the rate
// limit sets the pace and more in flight would only hold more pages in memory. A Concurrency
// set below the default is kept as a cap: whoever lowered it shares the portal's bucket with
// something else.
func (w *rangeWalk) workers() int {
	if w.density <= 0 {
		return 1
	}
	workers := w.g.Env.e.concurrency
	burst := rest.DefaultRate().Burst - 1
	if open := countOpen(w.ranges); workers >= defaultConcurrency && open > workers && open <= burst {
		workers = min(open, max(workers, oneRound))
	}
	return workers
}

// run walks the open ranges with Concurrency requests in flight, storing each answer as it
// comes, until every range is read.
func (w *rangeWalk) run(ctx context.Context) error {
	workers := w.workers()
	err := runPool(ctx, workers, w.take, func(ctx context.Context, job rangeJob) error {
		began := time.Now()
		pages, err := w.g.Env.e.source.ScanSegments(ctx, w.scan.Scan, job.segs)
		fetched := time.Now()
		if err == nil {
			err = w.store(ctx, job.rs, pages)
		}
		w.g.Env.e.log.Debug("ID ranges read", "entity", w.g.Ent.Name, "ranges", len(job.rs),
			"fetch_ms", fetched.Sub(began).Milliseconds(), "store_ms", time.Since(fetched).Milliseconds())
		return err
	}, w.release)
	if errors.Is(err, ErrLimitReached) {
		return nil
	}
	return err
}

// store keeps the pages read for some ranges in one transaction: their records, the records'
// children, under test_limit the records they refer to that are not stored yet, a page log row
// per page, the ranges' cursors and the inventory.
func (w *rangeWalk) store(ctx context.Context, rs []*idRange, pages [][]rest.Page) error {
	e, ent := w.g.Env.e, w.g.Ent
	type moved struct {
		r      *idRange
		cursor string
		done   bool
		pages  []PageRecord
		rows   int
	}
	var moves []moved
	var recs []Incoming
	limited := false
	w.mu.Lock()
	left := int64(math.MaxInt64)
	if lim := e.testLimit; lim > 0 && w.delta == nil {
		left = int64(lim) - w.before - w.stored
	}
	w.mu.Unlock()
	for i, r := range rs {
		m := moved{r: r, cursor: r.cursor}
		for _, p := range pages[i] {
			rows, last := p.Rows, p.Last
			if int64(len(rows)) >= left {
				rows, last, limited = rows[:max(left, 0)], true, true
			}
			left -= int64(len(rows))
			if w.delta != nil {
				var err error
				if rows, err = w.delta.fresh(ent, w.scan.IDPrefix, rows); err != nil {
					return err
				}
			}
			rows, err := w.scan.complete(ctx, e, rows)
			if err != nil {
				return err
			}
			got, gotIDs, err := decodeRowsAs(ent, w.scan.IDPrefix, w.scan.Fill, rows, w.zone)
			if err != nil {
				return err
			}
			next := p.Next
			if len(gotIDs) > 0 && w.delta == nil { // a delta's page may have dropped rows read before
				next = gotIDs[len(gotIDs)-1]
			}
			recs = append(recs, got...)
			m.pages = append(m.pages, PageRecord{Pass: w.pass, Cursor: p.Cursor, Next: next, Count: len(got)})
			m.cursor, m.done, m.rows = next, last, m.rows+len(got)
			if last {
				break
			}
		}
		moves = append(moves, m)
	}
	parents, conclude, err := w.parentsToRead(ctx, recs)
	if err != nil {
		return err
	}
	kids, reread, err := e.fetchChildren(ctx, ent, parents, conclude, w.zone)
	if err != nil {
		return err
	}
	batch := append([]EntityRecords{{ent, recs}}, kids...)
	if e.testLimit > 0 {
		pulled, err := e.pullReferenced(ctx, batch, w.zone)
		if err != nil {
			return err
		}
		batch = append(batch, pulled...)
	}
	ranges := &rangeLog{scope: w.scan.scope(ent), pass: w.pass, total: w.total, limited: limited}
	for _, m := range moves {
		ranges.pages = append(ranges.pages, m.pages...)
		ranges.steps = append(ranges.steps, rangeStep{lo: m.r.lo, cursor: m.cursor, done: m.done || limited})
	}
	page := Page{Records: batch, ranges: ranges, reread: reread}
	if w.delta != nil {
		page.ranges, page.then = nil, w.delta.log(ranges, e.runID)
	}
	saved, err := e.savePage(ctx, e.store(), page)
	if err != nil {
		return err
	}
	if w.delta != nil {
		w.delta.stored(recs)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range moves {
		m.r.cursor, m.r.done = m.cursor, m.done || limited
		w.g.Stats.Pages += len(m.pages)
		w.stored += int64(m.rows)
	}
	for _, ps := range pages {
		for _, p := range ps {
			w.size.add(p.Rows)
		}
	}
	saved.AddCounts(w.g.Stats)
	open := slices.ContainsFunc(w.ranges, func(r *idRange) bool { return !r.done })
	if w.delta == nil {
		w.g.Stats.Complete = !open || limited
	}
	e.progress("get", ent.Name, w.before+w.stored, w.total, int(w.stored), w.g.Start)
	if limited {
		w.limit = true
		return ErrLimitReached
	}
	return nil
}
