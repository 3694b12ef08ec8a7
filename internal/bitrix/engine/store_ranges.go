package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/jackc/pgx/v5"
)

// The store's rows of an ID scan's ranges (bitrix_get_ranges).

// loadRanges returns the ranges of a pass in ID order; a pass begun before get walked ranges
// (one cursor in the inventory) becomes one open range from that cursor.
func (s Store) loadRanges(ctx context.Context, entity string, inv Inventory) ([]*idRange, error) {
	rows, err := s.db.Query(ctx, `SELECT lo, hi, cursor, done FROM bitrix_get_ranges WHERE entity = $1 AND pass = $2`, entity, inv.Pass)
	if err != nil {
		return nil, fmt.Errorf("load ID ranges of %s: %w", entity, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*idRange, error) {
		r := &idRange{}
		return r, row.Scan(&r.lo, &r.hi, &r.cursor, &r.done)
	})
	if err != nil {
		return nil, fmt.Errorf("load ID ranges of %s: %w", entity, err)
	}
	if len(out) == 0 {
		out = []*idRange{{lo: "0", hi: "", cursor: inv.Cursor}}
		if err := s.saveRanges(ctx, entity, inv.Pass, out); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b *idRange) int { return rest.CompareIDs(a.lo, b.lo) })
	return out, nil
}

// saveRanges records a pass's planned ranges.
func (s Store) saveRanges(ctx context.Context, entity string, pass int, ranges []*idRange) error {
	var los, his, cursors []string
	var dones []bool
	for _, r := range ranges {
		los, his, cursors, dones = append(los, r.lo), append(his, r.hi), append(cursors, r.cursor), append(dones, r.done)
	}
	_, err := s.db.Exec(ctx, `INSERT INTO bitrix_get_ranges (entity, pass, lo, hi, cursor, done)
SELECT $1, $2, lo, hi, c, d FROM unnest($3::text[], $4::text[], $5::text[], $6::bool[]) AS u(lo, hi, c, d)`,
		entity, pass, los, his, cursors, dones)
	if err != nil {
		return fmt.Errorf("plan ID ranges of %s: %w", entity, err)
	}
	return nil
}

// splitRange cuts the range of a pass starting at lo at mid: it ends at mid, and a new range
// from mid to hi (its cursor at mid) is planned, in one statement so a kill leaves both or
// neither.
func (s Store) splitRange(ctx context.Context, entity string, pass int, lo, mid, hi string) error {
	_, err := s.db.Exec(ctx, `WITH cut AS (UPDATE bitrix_get_ranges SET hi = $4
WHERE entity = $1 AND pass = $2 AND lo = $3 RETURNING 1)
INSERT INTO bitrix_get_ranges (entity, pass, lo, hi, cursor) SELECT $1, $2, $4, $5, $4 FROM cut`,
		entity, pass, lo, mid, hi)
	if err != nil {
		return fmt.Errorf("split ID range after %s of %s: %w", lo, entity, err)
	}
	return nil
}

// advanceRange moves the range of a pass starting at lo to its new cursor (done when it read
// to its end), in the transaction that stores the records read.
func (s Store) advanceRange(ctx context.Context, entity string, pass int, lo, cursor string, done bool) error {
	if s.tx == nil {
		return errNoTx
	}
	if _, err := s.tx.Exec(ctx, `UPDATE bitrix_get_ranges SET cursor = $4, done = $5
WHERE entity = $1 AND pass = $2 AND lo = $3`, entity, pass, lo, cursor, done); err != nil {
		return fmt.Errorf("advance ID range after %s of %s: %w", lo, entity, err)
	}
	return nil
}
