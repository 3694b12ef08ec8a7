package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Inventory is an entity's SourceInventory row (seed 000 §12): what the source reported, how far
// the get pass has come, and whether the entity is verified.
type Inventory struct {
	Entity string `json:"entity"`
	// SourceTotal is the row count the portal reported for the current pass, nil before any.
	SourceTotal *int64 `json:"source_total"`
	// Pass numbers the full passes of get; PassRows counts the rows read in the current one.
	Pass     int   `json:"pass"`
	PassRows int64 `json:"pass_rows"`
	// Cursor is the last ID stored; an interrupted get resumes after it.
	Cursor string `json:"cursor"`
	// Complete is set when the pass reached the end (or the test limit): the next get starts a
	// new pass, which is how records changed on the source are found.
	Complete bool `json:"complete"`
	// Limit is the test_limit the pass ran with, nil for a full pass.
	Limit      *int       `json:"test_limit,omitempty"`
	StartedAt  *time.Time `json:"get_started_at,omitempty"`
	FinishedAt *time.Time `json:"get_finished_at,omitempty"`
	// Verified is the entity's VERIFIED flag: set by a clean verify, cleared as soon as a get
	// adds or changes a record.
	Verified   bool       `json:"verified"`
	VerifiedAt *time.Time `json:"verified_at,omitempty"`
	// LastVerify is the report of the last verify, clean or not.
	LastVerify *VerifyReport `json:"last_verify,omitempty"`
	// UpdatedAt is when the row last changed: every page a get stores, and the start of a get that
	// resumes the pass (touchPasses), move it.
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
	// Kind is the current (or last) pass's kind, and Reason why it is that kind (pass.go).
	Kind   PassKind `json:"pass_kind"`
	Reason *string  `json:"pass_reason,omitempty"`
	// PortalStartedAt is the portal's clock at the pass's start; a delta pass after it reads
	// from there (less the margin). DeltaSince is, for a delta pass, where it reads from.
	PortalStartedAt *time.Time `json:"portal_started_at,omitempty"`
	DeltaSince      *time.Time `json:"delta_since,omitempty"`
	// LastFullAt is when the last complete full pass without a limit started.
	LastFullAt *time.Time `json:"last_full_at,omitempty"`
	// Fingerprint is what the last full pass read with (Fingerprint).
	Fingerprint *string `json:"fingerprint,omitempty"`
}

const inventoryColumns = `entity, source_total, pass, pass_rows, get_cursor, get_complete, get_limit,
get_started_at, get_finished_at, verified, verified_at, verify_report, updated_at,
pass_kind, pass_reason, portal_started_at, delta_since, last_full_at, fingerprint`

// loadInventory returns the entity's inventory row, creating it on first use.
func (s Store) loadInventory(ctx context.Context, entity string) (Inventory, error) {
	if _, err := s.db.Exec(ctx, `INSERT INTO bitrix_inventory (entity) VALUES ($1) ON CONFLICT DO NOTHING`, entity); err != nil {
		return Inventory{}, fmt.Errorf("inventory of %s: %w", entity, err)
	}
	rows, err := s.db.Query(ctx, `SELECT `+inventoryColumns+` FROM bitrix_inventory WHERE entity = $1`, entity)
	if err != nil {
		return Inventory{}, fmt.Errorf("inventory of %s: %w", entity, err)
	}
	inv, err := pgx.CollectExactlyOneRow(rows, scanInventory)
	if err != nil {
		return Inventory{}, fmt.Errorf("inventory of %s: %w", entity, err)
	}
	return inv, nil
}

func scanInventory(row pgx.CollectableRow) (Inventory, error) {
	var inv Inventory
	var report []byte
	err := row.Scan(&inv.Entity, &inv.SourceTotal, &inv.Pass, &inv.PassRows, &inv.Cursor, &inv.Complete,
		&inv.Limit, &inv.StartedAt, &inv.FinishedAt, &inv.Verified, &inv.VerifiedAt, &report, &inv.UpdatedAt,
		&inv.Kind, &inv.Reason, &inv.PortalStartedAt, &inv.DeltaSince, &inv.LastFullAt, &inv.Fingerprint)
	if err != nil || report == nil {
		return inv, err
	}
	inv.LastVerify = &VerifyReport{}
	if err := json.Unmarshal(report, inv.LastVerify); err != nil {
		return inv, fmt.Errorf("decode verify report: %w", err)
	}
	return inv, nil
}

// startPass begins a new full pass of get from the first ID.
func (s Store) startPass(ctx context.Context, entity string, limit int) (Inventory, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	_, err := s.db.Exec(ctx, `UPDATE bitrix_inventory SET pass = pass + 1, pass_rows = 0, get_cursor = '0',
get_complete = false, get_limit = $2, source_total = NULL, get_started_at = now(), get_finished_at = NULL,
pass_kind = 'full', pass_reason = NULL, delta_since = NULL, portal_started_at = NULL, updated_at = now()
WHERE entity = $1`, entity, lim)
	if err != nil {
		return Inventory{}, fmt.Errorf("start get pass of %s: %w", entity, err)
	}
	return s.loadInventory(ctx, entity)
}

// lastFullAtSQL is the SET clause that records, when complete (an SQL condition) holds, a full
// pass without a limit as the last full one: a delta pass is measured from it.
func lastFullAtSQL(complete string) string {
	return `last_full_at = CASE WHEN ` + complete + ` AND pass_kind = 'full' AND get_limit IS NULL
THEN get_started_at ELSE last_full_at END`
}

// PageRecord is one page of a get, as logged in bitrix_page_log: the log is where an
// interrupted key walk resumes from, and the record of what each page held.
type PageRecord struct {
	Pass         int
	Cursor, Next string
	Count        int
	// Total is the pass's row count as far as the portal said, nil if it did not.
	Total *int64
	// Last ends the pass.
	Last bool
}

// logPage records one page of a listing walked by one cursor (a list without ids, a key's
// walk) and moves the inventory's cursor past it, in the transaction that stores the page.
func (s Store) logPage(ctx context.Context, entity string, runID int64, p PageRecord) error {
	if s.tx == nil {
		return errNoTx
	}
	_, err := s.tx.Exec(ctx, `INSERT INTO bitrix_page_log (entity, pass, cursor, next_cursor, count, total, run_id)
VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, 0))`, entity, p.Pass, p.Cursor, p.Next, p.Count, p.Total, runID)
	if err != nil {
		return fmt.Errorf("log page of %s after %s: %w", entity, p.Cursor, err)
	}
	_, err = s.tx.Exec(ctx, `UPDATE bitrix_inventory SET get_cursor = $2, pass_rows = pass_rows + $3,
source_total = coalesce($4, source_total), get_complete = $5,
get_finished_at = CASE WHEN $5 THEN now() END, `+lastFullAtSQL("$5")+`, updated_at = now() WHERE entity = $1`,
		entity, p.Next, p.Count, p.Total, p.Last)
	if err != nil {
		return fmt.Errorf("advance get cursor of %s: %w", entity, err)
	}
	return nil
}

// logPages records pages of a pass and moves the inventory past them: the rows read, the total
// the portal reported, the cursor of an interrupted pass (the lowest place an open ID range
// stopped at) and, once no range is open (or test_limit was reached), the pass's end. Called in
// the transaction that stores the pages' records, so the inventory never runs ahead of (or
// behind) the data.
func (s Store) logPages(ctx context.Context, entity string, runID int64, pass int, pages []PageRecord, total *int64, limited bool) error {
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
		entity, pass, cursors, nexts, counts, total, runID)
	if err != nil {
		return fmt.Errorf("log pages of %s: %w", entity, err)
	}
	// The inventory row's lock comes first, in a statement of its own: the UPDATE below then
	// starts (READ COMMITTED: a new snapshot per statement) after any other range's transaction
	// that held the row has committed, and sees that range done. Taken inside the UPDATE, the
	// lock's wait would re-check the row but not the open ranges, and two ranges ending at once
	// would each see the other open: the pass would never be marked complete.
	if _, err := s.tx.Exec(ctx, `SELECT 1 FROM bitrix_inventory WHERE entity = $1 FOR UPDATE`, entity); err != nil {
		return fmt.Errorf("lock inventory of %s: %w", entity, err)
	}
	_, err = s.tx.Exec(ctx, `WITH open AS (SELECT cursor FROM bitrix_get_ranges WHERE entity = $1 AND pass = $2 AND NOT done)
UPDATE bitrix_inventory SET pass_rows = pass_rows + $3, source_total = coalesce($4, source_total),
get_cursor = coalesce((SELECT cursor FROM open ORDER BY length(cursor), cursor LIMIT 1), get_cursor),
get_complete = $5 OR NOT EXISTS (SELECT 1 FROM open),
get_finished_at = CASE WHEN $5 OR NOT EXISTS (SELECT 1 FROM open) THEN now() END,
`+lastFullAtSQL("($5 OR NOT EXISTS (SELECT 1 FROM open))")+`, updated_at = now()
WHERE entity = $1`, entity, pass, rows, total, limited)
	if err != nil {
		return fmt.Errorf("advance get of %s: %w", entity, err)
	}
	return nil
}

// unverify clears an entity's VERIFIED flag: its records changed since the last verify.
func (s Store) unverify(ctx context.Context, entity string) error {
	_, err := s.db.Exec(ctx, `UPDATE bitrix_inventory SET verified = false, updated_at = now()
WHERE entity = $1 AND verified`, entity)
	if err != nil {
		return fmt.Errorf("clear verified flag of %s: %w", entity, err)
	}
	return nil
}

// saveVerify stores a verify report, and sets or clears the VERIFIED flag by its outcome.
func (s Store) saveVerify(ctx context.Context, entity string, r VerifyReport) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode verify report of %s: %w", entity, err)
	}
	if _, err := s.loadInventory(ctx, entity); err != nil {
		return err
	}
	_, err = s.db.Exec(ctx, `UPDATE bitrix_inventory SET verify_report = $2, verify_at = now(), verified = $3,
verified_at = CASE WHEN $3 THEN now() ELSE verified_at END, updated_at = now() WHERE entity = $1`, entity, raw, r.Clean())
	if err != nil {
		return fmt.Errorf("store verify report of %s: %w", entity, err)
	}
	return nil
}
