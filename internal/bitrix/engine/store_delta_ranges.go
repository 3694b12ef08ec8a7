package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/status"
)

// The SQL of a delta pass's ID-range counts and of the deletions concluded in the ranges it
// listed again (delta_ranges.go, deletions_delta.go).

// numericTail is the SQL of a record's id after the scan's prefix ($n is the prefix's length + 1)
// as a bigint, NULL when it is not a number: a CASE, so that the cast is never tried on text.
func numericTail(n string) string {
	return `CASE WHEN substr(source_id, ` + n + `) ~ '^[0-9]{1,18}$' THEN substr(source_id, ` + n + `)::bigint END`
}

// liveIDChunks cuts the live records of entity whose portal ids start with prefix into ranges of
// size records in ID order: the first after 0, each next after the one before's last id, each
// up to and including its own last id; with the stored count of each. odd counts the records
// whose id after the prefix is not a number (not in any range).
func (s Store) liveIDChunks(ctx context.Context, entity, prefix string, size int) (chunks []countedRange, odd int64, err error) {
	chunks, err = s.liveIDChunksIn(ctx, entity, prefix, size, countedRange{lo: "0"})
	if err != nil {
		return nil, 0, err
	}
	err = s.db.QueryRow(ctx, `SELECT count(*) FROM bitrix_records WHERE entity = $1 AND starts_with(source_id, $2)
AND `+live("")+` AND `+numericTail("$3")+` IS NULL`, entity, prefix, len(prefix)+1).Scan(&odd)
	if err != nil {
		return nil, 0, fmt.Errorf("count the stored ids of %s that are not numbers: %w", entity, err)
	}
	return chunks, odd, nil
}

// liveIDChunksIn is liveIDChunks of the stored ids within one range (after its lo, up to its hi;
// no hi: to the end), the first chunk starting after lo.
func (s Store) liveIDChunksIn(ctx context.Context, entity, prefix string, size int, within countedRange) ([]countedRange, error) {
	var hiBound *int64
	if within.hi != "" {
		h, err := strconv.ParseInt(within.hi, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cut the stored ids of %s: range end %q: %w", entity, within.hi, err)
		}
		hiBound = &h
	}
	loBound, err := strconv.ParseInt(within.lo, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("cut the stored ids of %s: range start %q: %w", entity, within.lo, err)
	}
	rows, err := s.db.Query(ctx, `WITH ids AS (SELECT `+numericTail("$3")+` AS n FROM bitrix_records
WHERE entity = $1 AND starts_with(source_id, $2) AND `+live("")+`)
SELECT max(n), count(*) FROM (SELECT n, (row_number() OVER (ORDER BY n) - 1) / $4 AS k FROM ids
WHERE n IS NOT NULL AND n > $5 AND ($6::bigint IS NULL OR n <= $6)) x
GROUP BY k ORDER BY k`, entity, prefix, len(prefix)+1, size, loBound, hiBound)
	if err != nil {
		return nil, fmt.Errorf("cut the stored ids of %s into ranges: %w", entity, err)
	}
	var chunks []countedRange
	lo := within.lo
	var hi, n int64
	_, err = pgx.ForEachRow(rows, []any{&hi, &n}, func() error {
		h := strconv.FormatInt(hi, 10)
		chunks = append(chunks, countedRange{lo: lo, hi: h, stored: n})
		lo = h
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cut the stored ids of %s into ranges: %w", entity, err)
	}
	return chunks, nil
}

// planRelisting records the counts of a delta pass: the ranges that differ become ranges of the
// pass to list again, each with its page log row (countMark), and the pass ends when none is
// open; the portal's total (when every count was one) and, when the counts found what the
// pass cannot explain, a note on the pass's reason are kept on its inventory.
func (s Store) planRelisting(ctx context.Context, scope string, pass int, runID int64, differ []countedRange, total *int64, note string) error {
	if len(differ) > 0 {
		ranges := make([]*idRange, len(differ))
		var cursors, nexts []string
		var counts []int32
		var totals []int64
		for i, c := range differ {
			ranges[i] = &idRange{lo: c.lo, hi: c.hi, cursor: c.lo}
			cursors, nexts = append(cursors, countMark+c.lo), append(nexts, c.hi)
			counts, totals = append(counts, int32(c.stored)), append(totals, c.portal)
		}
		if err := s.saveRanges(ctx, scope, pass, ranges); err != nil {
			return err
		}
		_, err := s.db.Exec(ctx, `INSERT INTO bitrix_page_log (entity, pass, cursor, next_cursor, count, total, run_id)
SELECT $1, $2, c, n, k, t, NULLIF($7, 0) FROM unnest($3::text[], $4::text[], $5::int[], $6::bigint[]) AS u(c, n, k, t)`,
			scope, pass, cursors, nexts, counts, totals, runID)
		if err != nil {
			return fmt.Errorf("log the ID ranges of %s to list again: %w", scope, err)
		}
	}
	_, err := s.db.Exec(ctx, `WITH open AS (SELECT 1 FROM bitrix_get_ranges WHERE entity = $1 AND pass = $2 AND NOT done)
UPDATE bitrix_inventory SET get_complete = NOT EXISTS (SELECT 1 FROM open),
get_finished_at = CASE WHEN EXISTS (SELECT 1 FROM open) THEN NULL ELSE coalesce(get_finished_at, now()) END,
source_total = coalesce($3, source_total),
pass_reason = CASE WHEN $4 = '' THEN pass_reason ELSE concat_ws('; ', pass_reason, $4::text) END, updated_at = now()
WHERE entity = $1 AND pass = $2`, scope, pass, total, note)
	if err != nil {
		return fmt.Errorf("record the ID-range counts of %s: %w", scope, err)
	}
	return nil
}

// relisted is a range a delta pass lists again: its place in the walk, and the counts that
// made it differ.
type relisted struct {
	*idRange
	portal, stored int64
	// counted is when the counts were recorded (the page log row's time, on the database's
	// clock as the records' fetched_at): a record read at or after it was read by the listing
	// again, not by the pass's filtered scans before.
	counted time.Time
}

// relistedRanges returns the ranges a delta pass of scope lists again (its page log rows of
// countMark and their ranges), in ID order, each with the density its portal count gives.
func (s Store) relistedRanges(ctx context.Context, scope string, pass int) ([]relisted, error) {
	rows, err := s.db.Query(ctx, `SELECT g.lo, g.hi, g.cursor, g.done, coalesce(l.total, 0), l.count, l.fetched_at FROM bitrix_page_log l
JOIN bitrix_get_ranges g ON g.entity = l.entity AND g.pass = l.pass AND g.lo = substr(l.cursor, length($3) + 1) AND g.hi = l.next_cursor
WHERE l.entity = $1 AND l.pass = $2 AND starts_with(l.cursor, $3)`, scope, pass, countMark)
	if err != nil {
		return nil, fmt.Errorf("load the ID ranges of %s listed again: %w", scope, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (relisted, error) {
		r := relisted{idRange: &idRange{}}
		err := row.Scan(&r.lo, &r.hi, &r.cursor, &r.done, &r.portal, &r.stored, &r.counted)
		if span := span64(r.lo, r.hi); span > 0 {
			r.density = float64(r.portal) / span
		}
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("load the ID ranges of %s listed again: %w", scope, err)
	}
	slices.SortFunc(out, func(a, b relisted) int { return rest.CompareIDs(a.lo, b.lo) })
	return out, nil
}

// inRangeRecord is a live record in a range a delta pass listed again: which range (its index),
// whether the pass saw it, and whether the listing again did.
type inRangeRecord struct {
	goneRecord
	rng            int
	seen, relisted bool
}

// recordsInRanges returns the live records of entity whose portal ids start with prefix and lie
// in one of the ranges (sorted, not overlapping), each with its range, whether it was read at or
// after since, and whether at or after its range's counts.
func (s Store) recordsInRanges(ctx context.Context, entity, prefix string, since time.Time, ranges []relisted) ([]inRangeRecord, error) {
	above := make([]int64, len(ranges)) // width_bucket's thresholds: a range holds the ids above its lo
	upTo := make([]int64, len(ranges))
	counted := make([]time.Time, len(ranges))
	for i, r := range ranges {
		lo, errL := strconv.ParseInt(r.lo, 10, 64)
		hi, errH := strconv.ParseInt(r.hi, 10, 64)
		if errL != nil || errH != nil {
			return nil, fmt.Errorf("%s: ID range after %q up to %q is not numeric", entity, r.lo, r.hi)
		}
		above[i], upTo[i], counted[i] = lo+1, hi, r.counted
	}
	rows, err := s.db.Query(ctx, `SELECT id, source_id, status, b - 1, fetched_at >= $5, fetched_at >= ($7::timestamptz[])[b] FROM (
  SELECT id, source_id, status, fetched_at, n, width_bucket(n, $3::bigint[]) AS b FROM (
    SELECT id, source_id, status, fetched_at, `+numericTail("$6")+` AS n FROM bitrix_records
    WHERE entity = $1 AND starts_with(source_id, $2) AND `+live("")+`) r WHERE n IS NOT NULL) x
WHERE b > 0 AND n <= ($4::bigint[])[b] ORDER BY id`, entity, prefix, above, upTo, since, len(prefix)+1, counted)
	if err != nil {
		return nil, fmt.Errorf("find %s in the ID ranges listed again: %w", entity, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (inRangeRecord, error) {
		var r inRangeRecord
		var st string
		err := row.Scan(&r.id, &r.sourceID, &st, &r.rng, &r.seen, &r.relisted)
		r.status = status.Status(st)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("find %s in the ID ranges listed again: %w", entity, err)
	}
	return out, nil
}

// unseenOutside is Store.unseen of the records whose portal ids start with none of prefixes.
func (s Store) unseenOutside(ctx context.Context, entity string, since time.Time, prefixes []string) ([]goneRecord, error) {
	rows, err := s.db.Query(ctx, `SELECT id, source_id, status FROM bitrix_records
WHERE entity = $1 AND fetched_at < $2 AND `+live("")+`
AND NOT EXISTS (SELECT 1 FROM unnest($3::text[]) AS p WHERE starts_with(source_id, p)) ORDER BY id`, entity, since, prefixes)
	if err != nil {
		return nil, fmt.Errorf("find %s no longer on the portal: %w", entity, err)
	}
	gone, err := pgx.CollectRows(rows, scanGone)
	if err != nil {
		return nil, fmt.Errorf("find %s no longer on the portal: %w", entity, err)
	}
	return gone, nil
}

// liveCount counts the entity's records the portal did not delete.
func (s Store) liveCount(ctx context.Context, entity string) (int64, error) {
	var n int64
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM bitrix_records WHERE entity = $1 AND `+live(""), entity).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s: %w", entity, err)
	}
	return n, nil
}

// scanInventory is the inventory row of a scan's scope, if it has one: unlike loadInventory it
// creates none (a process type no pass has read yet has no row, and gets none here).
func (s Store) scanInventory(ctx context.Context, scope string) (Inventory, bool, error) {
	rows, err := s.db.Query(ctx, `SELECT `+inventoryColumns+` FROM bitrix_inventory WHERE entity = $1`, scope)
	if err != nil {
		return Inventory{}, false, fmt.Errorf("inventory of %s: %w", scope, err)
	}
	invs, err := pgx.CollectRows(rows, scanInventory)
	if err != nil || len(invs) == 0 {
		if err != nil {
			err = fmt.Errorf("inventory of %s: %w", scope, err)
		}
		return Inventory{}, false, err
	}
	return invs[0], true, nil
}
