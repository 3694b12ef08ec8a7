package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// The store's side of a delta pass (lister_idscan_delta.go): the filtered scans' ranges and
// pages, kept under their own scopes, and the entity's inventory they move.

// passRanges returns the ranges a pass recorded under scope, in ID order (none when it recorded
// none yet), and the row count its pages' listing reported, if any did.
func (s Store) passRanges(ctx context.Context, scope string, pass int) ([]*idRange, *int64, error) {
	rows, err := s.db.Query(ctx, `SELECT lo, hi, cursor, done FROM bitrix_get_ranges WHERE entity = $1 AND pass = $2`, scope, pass)
	if err != nil {
		return nil, nil, fmt.Errorf("load ID ranges of %s: %w", scope, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*idRange, error) {
		r := &idRange{}
		return r, row.Scan(&r.lo, &r.hi, &r.cursor, &r.done)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("load ID ranges of %s: %w", scope, err)
	}
	slices.SortFunc(out, func(a, b *idRange) int { return rest.CompareIDs(a.lo, b.lo) })
	var total *int64
	if len(out) > 0 {
		err = s.db.QueryRow(ctx, `SELECT max(total) FROM bitrix_page_log WHERE entity = $1 AND pass = $2`, scope, pass).Scan(&total)
		if err != nil {
			return nil, nil, fmt.Errorf("count of %s: %w", scope, err)
		}
	}
	return out, total, nil
}

// logDeltaPages records pages of a delta pass's filtered scan under its scope and adds their rows
// to the pass's on the inventory of the scan's entity (inventory), in the transaction that
// stores them; the pass's end is finishDelta's.
func (s Store) logDeltaPages(ctx context.Context, inventory, scope string, runID int64, pass int, pages []PageRecord, total *int64) error {
	if s.tx == nil {
		return errNoTx
	}
	var cursors, nexts []string
	var counts []int32
	var rows int64
	for _, p := range pages {
		cursors, nexts, counts = append(cursors, p.Cursor), append(nexts, p.Next), append(counts, int32(p.Count))
		rows += int64(p.Count)
	}
	_, err := s.tx.Exec(ctx, `INSERT INTO bitrix_page_log (entity, pass, cursor, next_cursor, count, total, run_id)
SELECT $1, $2, c, n, k, $6, NULLIF($7, 0) FROM unnest($3::text[], $4::text[], $5::int[]) AS u(c, n, k)`,
		scope, pass, cursors, nexts, counts, total, runID)
	if err != nil {
		return fmt.Errorf("log pages of %s: %w", scope, err)
	}
	_, err = s.tx.Exec(ctx, `UPDATE bitrix_inventory SET pass_rows = pass_rows + $3, updated_at = now()
WHERE entity = $1 AND pass = $2`, inventory, pass, rows)
	if err != nil {
		return fmt.Errorf("advance get of %s: %w", inventory, err)
	}
	return nil
}

// deltaTotal records, on a delta pass just started, the whole listing's row count as the portal
// reported it (nil: it did not).
func (s Store) deltaTotal(ctx context.Context, scope string, total *int64) error {
	if _, err := s.db.Exec(ctx, `UPDATE bitrix_inventory SET source_total = $2 WHERE entity = $1`, scope, total); err != nil {
		return fmt.Errorf("record the count of %s: %w", scope, err)
	}
	return nil
}

// finishDelta marks a delta pass complete: every filtered scan of it was read.
func (s Store) finishDelta(ctx context.Context, scope string, pass int) error {
	_, err := s.db.Exec(ctx, `UPDATE bitrix_inventory SET get_complete = true, get_finished_at = now(), updated_at = now()
WHERE entity = $1 AND pass = $2 AND pass_kind = 'delta'`, scope, pass)
	if err != nil {
		return fmt.Errorf("finish the delta pass of %s: %w", scope, err)
	}
	return nil
}

// deltaToFull turns a delta pass under way into a full one (fullAfterAll), with the fingerprint a
// full pass records.
func (s Store) deltaToFull(ctx context.Context, scope string, pass int, reason, fingerprint string) error {
	_, err := s.db.Exec(ctx, `UPDATE bitrix_inventory SET pass_kind = 'full', pass_reason = $3, delta_since = NULL,
fingerprint = $4, updated_at = now() WHERE entity = $1 AND pass = $2`, scope, pass, reason, fingerprint)
	if err != nil {
		return fmt.Errorf("turn the delta pass of %s full: %w", scope, err)
	}
	return nil
}

// MarkPass records the kind of the current get pass of an entity read in parts (each part an
// inventory row deciding its own kind) and why: a pass is delta as soon as one part read only
// what changed, since then the pass did not see every record.
//
// Caller: smartItems.Get (internal/bitrix/lister_smart.go).
func (s Store) MarkPass(ctx context.Context, entity string, d PassDecision) error {
	_, err := s.db.Exec(ctx, `UPDATE bitrix_inventory SET pass_kind = $2, pass_reason = $3, updated_at = now()
WHERE entity = $1`, entity, string(d.Kind), d.Reason)
	if err != nil {
		return fmt.Errorf("record the get pass of %s: %w", entity, err)
	}
	return nil
}
