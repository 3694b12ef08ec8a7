package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The queries an entity's own code asks of its records: generic in the entity, the payload
// fields and the entities they name, which the caller gives.

// Payloads returns the payloads of the entity's records, in record order.
func (s Store) Payloads(ctx context.Context, entity string) ([]json.RawMessage, error) {
	rows, err := s.db.Query(ctx, `SELECT payload FROM bitrix_records WHERE entity = $1 ORDER BY id`, entity)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", entity, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[json.RawMessage])
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", entity, err)
	}
	return out, nil
}

// FieldValue is one record's value of a payload field, as text ("" when absent or null).
type FieldValue struct {
	SourceID, Value string
}

// FieldValues returns every record's value of the payload field, in record order.
func (s Store) FieldValues(ctx context.Context, entity, field string) ([]FieldValue, error) {
	rows, err := s.db.Query(ctx, `SELECT source_id, coalesce(payload->>$2, '') FROM bitrix_records WHERE entity = $1 AND `+live("")+`
ORDER BY id`,
		entity, field)
	if err != nil {
		return nil, fmt.Errorf("read %s of %s: %w", field, entity, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[FieldValue])
	if err != nil {
		return nil, fmt.Errorf("read %s of %s: %w", field, entity, err)
	}
	return out, nil
}

// CountWithField counts the entity's records whose payload has the field, and those without,
// leaving out those the portal deleted.
func (s Store) CountWithField(ctx context.Context, entity, field string) (with, without int64, err error) {
	err = s.db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE payload ? $2), count(*) FILTER (WHERE NOT payload ? $2)
FROM bitrix_records WHERE entity = $1 AND `+live(""), entity, field).Scan(&with, &without)
	if err != nil {
		return 0, 0, fmt.Errorf("count %s by %s: %w", entity, field, err)
	}
	return with, without, nil
}

// countByParent counts a child entity's records by their parent's source id.
func (s Store) countByParent(ctx context.Context, child string) (map[string]int64, error) {
	return s.byParent(ctx, "count "+child+" per parent",
		`SELECT parent_source_id, count(*) FROM bitrix_records WHERE entity = $1 GROUP BY 1`, child)
}

// byParent runs a query of one figure per parent (its source id, the figure) into a map; what
// names the query in its error.
func (s Store) byParent(ctx context.Context, what, sql string, args ...any) (map[string]int64, error) {
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out := map[string]int64{}
	var parent string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&parent, &n}, func() error { out[parent] = n; return nil }); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// NewestBySeq returns, per parent, the highest sequence among a child entity's records whose
// source ids are "<key>:<sequence>" (a walk's records numbered within their key, as messages
// within a conversation); field, when not empty, keeps only the records whose payload has it.
func (s Store) NewestBySeq(ctx context.Context, child, field string) (map[string]int64, error) {
	return s.byParent(ctx, "find the newest stored "+child, `SELECT parent_source_id, max(split_part(source_id, ':', 2)::bigint)
FROM bitrix_records WHERE entity = $1 AND ($2 = '' OR payload ? $2) GROUP BY 1`, child, field)
}

// Childless returns the source ids of the parent entity's records that have no record of the
// child entity, in record order.
func (s Store) Childless(ctx context.Context, parent, child string) ([]string, error) {
	rows, err := s.db.Query(ctx, `SELECT p.source_id FROM bitrix_records p WHERE p.entity = $1
AND NOT EXISTS (SELECT 1 FROM bitrix_records c WHERE c.entity = $2 AND c.parent_source_id = p.source_id) ORDER BY p.id`,
		parent, child)
	if err != nil {
		return nil, fmt.Errorf("find %s without %s: %w", parent, child, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("find %s without %s: %w", parent, child, err)
	}
	return out, nil
}

// Unimported lists every record of the entity that is not IMPORT_OK, leaving out acknowledged
// ones and those whose payload has the field skip (records known not to be migratable), in
// record order.
func (s Store) Unimported(ctx context.Context, entity, skip string) ([]RecordIssue, error) {
	rows, err := s.db.Query(ctx, `SELECT source_id, status, coalesce(last_error, '') FROM bitrix_records
WHERE entity = $1 AND status <> $2 AND payload->$3 IS NULL AND acknowledged_at IS NULL ORDER BY id`, entity, string(ImportOK), skip)
	if err != nil {
		return nil, fmt.Errorf("list unimported %s: %w", entity, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RecordIssue, error) {
		i := RecordIssue{Entity: entity}
		return i, row.Scan(&i.SourceID, &i.Status, &i.Reason)
	})
	if err != nil {
		return nil, fmt.Errorf("list unimported %s: %w", entity, err)
	}
	return out, nil
}

// TargetIDByField returns the target id of the entity's record whose payload field holds value;
// pgx.ErrNoRows (wrapped) when no such record is imported.
func (s Store) TargetIDByField(ctx context.Context, entity, field, value string) (string, error) {
	var target string
	err := s.db.QueryRow(ctx, `SELECT m.target_id FROM bitrix_records r
JOIN bitrix_id_map m ON m.entity = r.entity AND m.source_id = r.source_id
WHERE r.entity = $1 AND r.payload->>$2 = $3`, entity, field, value).Scan(&target)
	if err != nil {
		return "", fmt.Errorf("target id of the %s whose %s is %s: %w", entity, field, value, err)
	}
	return target, nil
}

// FieldsNotOnTarget lists the entity's custom fields read by fields-get that the target does not
// have, as "NAME (type)", by name.
func (s Store) FieldsNotOnTarget(ctx context.Context, entity string) ([]string, error) {
	rows, err := s.db.Query(ctx, `SELECT field_name || ' (' || coalesce(payload->>'USER_TYPE_ID', '?') || ')' FROM bitrix_fields
WHERE entity = $1 AND NOT on_target ORDER BY field_name`, entity)
	if err != nil {
		return nil, fmt.Errorf("fields of %s not on the target: %w", entity, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("fields of %s not on the target: %w", entity, err)
	}
	return out, nil
}

// RollUpParams is one step of the get pass of an entity read in parts (each part an inventory
// row of its own): a part read, or the pass complete.
type RollUpParams struct {
	// Entity is the entity read in parts.
	Entity string
	// Cursor is the part just read; the pass's rows and source total become the sums of the
	// inventory rows named in Parts.
	Cursor string
	Parts  []string
	// Complete marks the pass complete instead, with the source total the parts summed to (0
	// when none said).
	Complete bool
}

// RollUp advances the get pass of an entity read in parts past the part just read, or marks it
// complete.
func (s Store) RollUp(ctx context.Context, p RollUpParams) error {
	if p.Complete {
		if _, err := s.db.Exec(ctx, `UPDATE bitrix_inventory SET get_complete = true, get_finished_at = now(),
source_total = coalesce(source_total, 0), updated_at = now() WHERE entity = $1`, p.Entity); err != nil {
			return fmt.Errorf("finish get of %s: %w", p.Entity, err)
		}
		return nil
	}
	if _, err := s.db.Exec(ctx, `UPDATE bitrix_inventory SET get_cursor = $2,
pass_rows = (SELECT coalesce(sum(pass_rows), 0) FROM bitrix_inventory WHERE entity = ANY($3)),
source_total = (SELECT sum(source_total) FROM bitrix_inventory WHERE entity = ANY($3)), updated_at = now()
WHERE entity = $1`, p.Entity, p.Cursor, p.Parts); err != nil {
		return fmt.Errorf("advance get of %s past %s: %w", p.Entity, p.Cursor, err)
	}
	return nil
}
