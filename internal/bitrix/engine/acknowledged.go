package engine

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/status"
)

// excused is the SQL condition, over the bitrix_records row aliased a of entity ent, of a record
// verify does not hold against the migration: one a person acknowledged as a known exception
// (`ingest status ack`), or a child waiting for such a parent. Entity names are registry names
// ([a-z][a-z0-9_]*), so they can stand in the SQL as literals.
func excused(a string, ent *Entity) string {
	cond := a + ".acknowledged_at IS NOT NULL"
	if ent.Parent != "" {
		cond += fmt.Sprintf(` OR EXISTS (SELECT 1 FROM bitrix_records ack WHERE ack.entity = '%s'
    AND ack.source_id = %s.parent_source_id AND ack.acknowledged_at IS NOT NULL)`, ent.Parent, a)
	}
	return "(" + cond + ")"
}

// countExcused counts the entity's records that are excused.
func countExcused(ctx context.Context, db status.DB, ent *Entity) (int64, error) {
	var n int64
	err := db.QueryRow(ctx, `SELECT count(*) FROM bitrix_records r WHERE r.entity = $1 AND `+excused("r", ent), ent.Name).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count acknowledged %s: %w", ent.Name, err)
	}
	return n, nil
}

// listAcknowledged puts the family's acknowledged records in the report, with who accepted
// them and why, and counts the children waiting for an acknowledged parent.
func (e *Engine) listAcknowledged(ctx context.Context, family []*Entity, r *VerifyReport) error {
	names := make([]string, len(family))
	for i, m := range family {
		names[i] = m.Name
	}
	rows, err := e.Pool.Query(ctx, `SELECT entity, source_id, status, coalesce(last_error, ''), coalesce(acknowledged_by, ''),
coalesce(acknowledged_reason, ''), 0::bigint FROM bitrix_records WHERE entity = ANY($1) AND acknowledged_at IS NOT NULL ORDER BY entity, id`, names)
	if err != nil {
		return fmt.Errorf("list acknowledged %v: %w", names, err)
	}
	issues, err := pgx.CollectRows(rows, pgx.RowToStructByPos[RecordIssue])
	if err != nil {
		return fmt.Errorf("list acknowledged %v: %w", names, err)
	}
	r.AcknowledgedCount = int64(len(issues))
	r.Acknowledged = issues[:min(len(issues), MaxListed)]
	for _, m := range family {
		if m.Parent == "" {
			continue
		}
		var n int64
		err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM bitrix_records r WHERE r.entity = $1 AND r.acknowledged_at IS NULL AND `+
			excused("r", m), m.Name).Scan(&n)
		if err != nil {
			return fmt.Errorf("count %s waiting for acknowledged %s: %w", m.Name, m.Parent, err)
		}
		r.AcknowledgedWaiting += n
	}
	return nil
}
