package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/status"
)

// The store's queries for verify: what is excused, what is not imported.

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
func (s Store) countExcused(ctx context.Context, ent *Entity) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM bitrix_records r WHERE r.entity = $1 AND `+excused("r", ent), ent.Name).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count acknowledged %s: %w", ent.Name, err)
	}
	return n, nil
}

// notImported lists (up to 50) the entity's records that are not IMPORT_OK and not excused by
// an acknowledgement.
func (s Store) notImported(ctx context.Context, ent *Entity) ([]RecordIssue, error) {
	entity := ent.Name
	rows, err := s.db.Query(ctx, `SELECT source_id, status, coalesce(last_error, '') FROM bitrix_records r
WHERE entity = $1 AND status <> $3 AND NOT `+excused("r", ent)+` AND NOT `+waitsForParent("r", ent)+` AND `+live("r")+` ORDER BY id LIMIT $2`, entity, MaxListed, string(ImportOK))
	if err != nil {
		return nil, fmt.Errorf("list unimported %s: %w", entity, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RecordIssue, error) {
		i := RecordIssue{Entity: entity}
		err := row.Scan(&i.SourceID, &i.Status, &i.Reason)
		return i, err
	})
	if err != nil {
		return nil, fmt.Errorf("list unimported %s: %w", entity, err)
	}
	return out, nil
}

// countByStatus counts the entity's records by status, and all of them the portal still has
// (deleted ones are counted by status only).
func (s Store) countByStatus(ctx context.Context, entity string) (map[string]int64, int64, error) {
	rows, err := s.db.Query(ctx, `SELECT status, count(*) FROM bitrix_records WHERE entity = $1 GROUP BY 1`, entity)
	if err != nil {
		return nil, 0, err
	}
	out := map[string]int64{}
	var all int64
	var st string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&st, &n}, func() error {
		out[st] = n
		if !IsDeleted(status.Status(st)) {
			all += n
		}
		return nil
	}); err != nil {
		return nil, 0, err
	}
	return out, all, nil
}

// eachChildNotImported hands fn the child entity's records that are not IMPORT_OK and not
// excused (up to MaxListed, in record order), each with its parent's source id and whether that
// parent is IMPORT_OK.
func (s Store) eachChildNotImported(ctx context.Context, child, parent *Entity, fn func(sourceID, status, reason, parentID string, parentOK bool)) error {
	rows, err := s.db.Query(ctx, `SELECT c.source_id, c.status, coalesce(c.last_error, ''), coalesce(c.parent_source_id, ''),
    EXISTS (SELECT 1 FROM bitrix_records p WHERE p.entity = $3 AND p.source_id = c.parent_source_id AND p.status = $4)
FROM bitrix_records c WHERE c.entity = $1 AND c.status <> $4 AND NOT `+excused("c", child)+` AND NOT `+waitsForParent("c", child)+` AND `+live("c")+`
ORDER BY c.id LIMIT $2`,
		child.Name, MaxListed, parent.Name, string(ImportOK))
	if err != nil {
		return err
	}
	var sid, st, reason, parentID string
	var parentOK bool
	_, err = pgx.ForEachRow(rows, []any{&sid, &st, &reason, &parentID, &parentOK}, func() error {
		fn(sid, st, reason, parentID, parentOK)
		return nil
	})
	return err
}

// countFetchedSince counts the entity's records read (stored or seen unchanged) since t.
func (s Store) countFetchedSince(ctx context.Context, entity string, t time.Time) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM bitrix_records WHERE entity = $1 AND fetched_at >= $2`, entity, t).Scan(&n)
	return n, err
}

// acknowledgedOf lists the acknowledged records of the entities, by entity and record order.
func (s Store) acknowledgedOf(ctx context.Context, entities []string) ([]RecordIssue, error) {
	rows, err := s.db.Query(ctx, `SELECT entity, source_id, status, coalesce(last_error, ''), coalesce(acknowledged_by, ''),
coalesce(acknowledged_reason, ''), 0::bigint FROM bitrix_records WHERE entity = ANY($1) AND acknowledged_at IS NOT NULL ORDER BY entity, id`, entities)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[RecordIssue])
}

// countWaitingForAcknowledged counts a child entity's records that are not acknowledged
// themselves but excused by their acknowledged parent.
func (s Store) countWaitingForAcknowledged(ctx context.Context, child *Entity) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM bitrix_records r WHERE r.entity = $1 AND r.acknowledged_at IS NULL AND `+
		excused("r", child), child.Name).Scan(&n)
	return n, err
}

// unreachableOf lists the entity's records that cannot be migrated, with the reason, in record
// order.
func (s Store) unreachableOf(ctx context.Context, entity string) ([]RecordIssue, error) {
	rows, err := s.db.Query(ctx, `SELECT source_id, status, payload->>$2 FROM bitrix_records
WHERE entity = $1 AND payload ? $2 ORDER BY id`, entity, UnreachableKey)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (RecordIssue, error) {
		i := RecordIssue{Entity: entity}
		return i, row.Scan(&i.SourceID, &i.Status, &i.Reason)
	})
}

// waitsForParent is the SQL condition, over the bitrix_records row aliased a of entity ent, of a
// child waiting for a parent that is stored and not imported.
func waitsForParent(a string, ent *Entity) string {
	if ent.Parent == "" {
		return "false"
	}
	return fmt.Sprintf(`(%[1]s.status = '%[2]s' AND EXISTS (SELECT 1 FROM bitrix_records wp WHERE wp.entity = '%[3]s'
    AND wp.source_id = %[1]s.parent_source_id AND wp.status <> '%[4]s'))`, a, StatusNew, ent.Parent, ImportOK)
}
