package engine

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The store's pages of records for verify's checks: each a keyset page (the records after an
// id, in id order), so a check walks a table of any size at the same cost per page.

// childRow is a child record as the coverage check reads it.
type childRow struct {
	id               int64
	sourceID, parent string
	parentImported   bool
}

// childPage returns up to limit records of child after the id, not excused and not known to be
// unreachable, each with whether its parent is IMPORT_OK.
func (s Store) childPage(ctx context.Context, child *Entity, after int64, limit int) ([]childRow, error) {
	rows, err := s.db.Query(ctx, `SELECT c.id, c.source_id, c.parent_source_id,
    EXISTS (SELECT 1 FROM bitrix_records p WHERE p.entity = $3 AND p.source_id = c.parent_source_id AND p.status = $4)
FROM bitrix_records c WHERE c.entity = $5 AND c.id > $1 AND NOT `+excused("c", child)+` AND NOT c.payload ? $6 AND `+live("c")+`
ORDER BY c.id LIMIT $2`, after, limit, child.Parent, string(ImportOK), child.Name, UnreachableKey)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", child.Name, err)
	}
	recs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (childRow, error) {
		var m childRow
		err := row.Scan(&m.id, &m.sourceID, &m.parent, &m.parentImported)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", child.Name, err)
	}
	return recs, nil
}

// refRow is a record as the reference check reads it: the id its field names, and that id's
// target id (nil when it has none).
type refRow struct {
	id                      int64
	sourceID, status, value string
	target                  *string
}

// refPage returns up to limit records of ent after the id with the reference's value and its
// target id; an optional reference left empty and unreachable records are left out.
func (s Store) refPage(ctx context.Context, ent *Entity, ref Ref, after int64, limit int) ([]refRow, error) {
	rows, err := s.db.Query(ctx, `SELECT x.id, x.source_id, x.status, coalesce(x.payload->>$3, ''), m.target_id
FROM bitrix_records x LEFT JOIN bitrix_id_map m ON m.entity = $4 AND m.source_id = x.payload->>$3
WHERE x.entity = $5 AND x.id > $1 AND NOT ($6 AND coalesce(x.payload->>$3, '') IN ('', '0')) AND NOT x.payload ? $7 AND `+live("x")+`
  AND NOT `+excused("x", ent)+`
ORDER BY x.id LIMIT $2`, after, limit, ref.Field, ref.Entity, ent.Name, ref.Optional, UnreachableKey)
	if err != nil {
		return nil, fmt.Errorf("verify %s %s: %w", ent.Name, ref.Field, err)
	}
	recs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (refRow, error) {
		var g refRow
		err := row.Scan(&g.id, &g.sourceID, &g.status, &g.value, &g.target)
		return g, err
	})
	if err != nil {
		return nil, fmt.Errorf("verify %s %s: %w", ent.Name, ref.Field, err)
	}
	return recs, nil
}

// linkRow is a record as the link check reads it: its link field's raw JSON value.
type linkRow struct {
	id               int64
	sourceID, status string
	value            []byte
}

// linkPage returns up to limit records of ent after the id with the field's value (JSON null
// when the payload has none).
func (s Store) linkPage(ctx context.Context, ent *Entity, field string, after int64, limit int) ([]linkRow, error) {
	rows, err := s.db.Query(ctx, `SELECT id, source_id, status, coalesce(payload->$3, 'null') FROM bitrix_records
WHERE entity = $4 AND id > $1 ORDER BY id LIMIT $2`, after, limit, field, ent.Name)
	if err != nil {
		return nil, fmt.Errorf("verify %s %s: %w", ent.Name, field, err)
	}
	recs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (linkRow, error) {
		var g linkRow
		err := row.Scan(&g.id, &g.sourceID, &g.status, &g.value)
		return g, err
	})
	if err != nil {
		return nil, fmt.Errorf("verify %s %s: %w", ent.Name, field, err)
	}
	return recs, nil
}

// sample draws up to size IMPORT_OK records of the entity at random.
func (s Store) sample(ctx context.Context, entity string, size int) ([]Record, error) {
	rows, err := s.db.Query(ctx, `SELECT `+recordColumns+` FROM bitrix_records WHERE entity = $1 AND status = $3
ORDER BY random() LIMIT $2`, entity, size, string(ImportOK))
	if err != nil {
		return nil, fmt.Errorf("verify %s: sample: %w", entity, err)
	}
	recs, err := pgx.CollectRows(rows, scanRecord)
	if err != nil {
		return nil, fmt.Errorf("verify %s: sample: %w", entity, err)
	}
	return recs, nil
}
